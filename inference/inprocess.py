"""Working a run in this process (`manage.py launch_run --here`) on the same job code as a worker.

Online runs: one thread per lane; each claims its lane's lease like a worker's chunk does
(`execution.run_chunk` with its lane: claim, heartbeat, renew, release) and works chunk after chunk
until none of the lane's images is missing. Nothing is sent to the broker: a lane's next chunk is
started here instead of being handed on. Should this process die, its leases expire and the
reconciler hands the lanes to workers, as for any worker that died. Batch runs are stepped here as
the poller would step them (`inference.batch.lifecycle.step`).

`watch` is what `--wait` does: it reads the run's row until the run is settled.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from django.conf import settings
from django.db import connection

from . import execution, leases
from .batch import conf as batch_conf
from .batch import lifecycle as batch_lifecycle
from .batch import status as batch_status
from .lifecycle import finish_if_complete
from .models import Run, RunLane

WORKING = (Run.STATUS_QUEUED, Run.STATUS_RUNNING)


def why_not_here(provider: str, mode: str) -> str:
    """Why a run of this provider and mode cannot be worked in this process ("" when it can)."""
    if mode == Run.MODE_BATCH and batch_conf.is_offline(provider):
        return ("vLLM batch runs are offline: their requests go through `manage.py batch_export` and `batch_ingest` "
                "on the GPU machine, not through this process.")
    return ""


def settled(run: Run) -> bool:
    """The run is final, or it waits for a person (a batch run whose failed requests need a retry decision)."""
    return not run.is_active or (run.mode == Run.MODE_BATCH and batch_status.can_retry(run))


def work(run_id: int, report: Callable[[Run], None] = lambda run: None, every: float = 1.0) -> Run:
    """Work the run here until it is settled; `report(run)` is called about every `every` seconds."""
    run = Run.objects.get(pk=run_id)
    if run.mode == Run.MODE_BATCH:
        return _work_batch(run, report)
    threads, errors = [], []
    for lane in leases.lanes_of(run):
        thread = threading.Thread(target=_work_lane, args=(run_id, lane.index, errors), name=f"run{run_id}-lane{lane.index}", daemon=True)
        thread.start()
        threads.append(thread)
    while any(t.is_alive() for t in threads):
        report(Run.objects.get(pk=run_id))
        for thread in threads:
            thread.join(timeout=every / max(1, len(threads)))
    if errors:
        raise errors[0]
    if Run.objects.filter(pk=run_id, status__in=WORKING).exists():
        finish_if_complete(run_id)  # e.g. nothing was left to do
    run = Run.objects.get(pk=run_id)
    report(run)
    return run


def _work_lane(run_id: int, index: int, errors: list) -> None:
    """Chunk after chunk on one lane, each claimed and leased; stops when nothing is missing, the run
    stops being worked (cancelled, failed), the lane is held by someone else, or a chunk made no progress."""
    try:
        while Run.objects.filter(pk=run_id, status__in=WORKING).exists():
            lane = RunLane.objects.get(run_id=run_id, index=index)
            missing = leases.missing_of(lane)
            if not missing:
                return
            result = execution.run_chunk(run_id, missing, lane.width, lane=index, hand_on=False)
            if "skipped" in result or "failed" in result or result.get("lease_lost") or result.get("fatal"):
                return
            if not result.get("written") and not result.get("duplicates"):
                return  # no progress (the run was cancelled while its requests waited): do not spin
    except Exception as exc:  # noqa: BLE001 - reported by the main thread
        errors.append(exc)
    finally:
        connection.close()


def _work_batch(run: Run, report: Callable[[Run], None]) -> Run:
    refusal = why_not_here(run.provider, run.mode)
    if refusal:
        raise ValueError(f"Run #{run.pk}: {refusal}")
    while True:
        batch_lifecycle.step(run.pk)
        run = Run.objects.get(pk=run.pk)
        report(run)
        if settled(run):
            return run
        time.sleep(settings.CPRT_BATCH_POLL_S)


def watch(run_id: int, report: Callable[[Run], None] = lambda run: None, every: float = 1.0, timeout: float | None = None) -> Run:
    """Read the run's row every `every` seconds until it is settled (the workers do the work)."""
    deadline = None if not timeout else time.monotonic() + timeout
    while True:
        run = Run.objects.get(pk=run_id)
        report(run)
        if settled(run):
            return run
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"Run #{run_id} is still {run.status} after {timeout:g} s ({run.done}/{run.total} images); "
                               "it goes on on the workers.")
        time.sleep(every)
