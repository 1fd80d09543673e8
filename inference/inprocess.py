"""Working a run in this process (`manage.py launch_run --here`) on the same job code as a worker.

Online runs: one thread per lane; each claims its lane's lease like a worker's chunk does
(`execution.run_chunk` with its lane: claim, heartbeat, renew, release) and works chunk after chunk
until none of the lane's images is missing. Nothing is sent to the broker: a lane's next chunk is
started here instead of being handed on. A chunk that could do nothing because something was down
(the provider, Redis behind the rate limiter) is followed by another after a growing
pause, so an outage is waited out; a lane is given up only when someone else holds it, and `work`
then says so (StoppedHere). Should this process die, its leases expire and the
reconciler hands the lanes to workers, as for any worker that died. Batch runs are stepped here as
the poller would step them (`inference.batch.lifecycle.step`).

`watch` is what `--wait` does: it reads the run's row until the run is settled.
"""
from __future__ import annotations

import random
import threading
import time
from typing import Callable

from django.conf import settings
from django.db import connection

from core.logs import in_context, job_context

from . import execution, leases
from .batch import conf as batch_conf
from .batch import lifecycle as batch_lifecycle
from .batch import status as batch_status
from .lifecycle import finish_if_complete
from .models import Run, RunLane

WORKING = (Run.STATUS_QUEUED, Run.STATUS_RUNNING)
LANE_BACKOFF_MAX_S = 8.0  # the longest a lane waits between chunks while something is down (as a chunk's pause)


def why_not_here(provider: str, mode: str) -> str:
    """Why a run of this provider and mode cannot be worked in this process ("" when it can)."""
    if mode == Run.MODE_BATCH and batch_conf.is_offline(provider):
        return ("vLLM batch runs are offline: their requests go through `manage.py batch_export` and `batch_ingest` "
                "on the GPU machine, not through this process.")
    return ""


def settled(run: Run) -> bool:
    """The run is final, or it waits for a person (a batch run whose failed requests need a retry decision)."""
    return not run.is_active or (run.mode == Run.MODE_BATCH and batch_status.can_retry(run))


HERE_TASK = "inference.run_here"  # the task name on the log lines of a run worked in this process


class StoppedHere(ValueError):
    """The lanes of a run worked here all stopped while the run is still to be done; says why."""


def work(run_id: int, report: Callable[[Run], None] = lambda run: None, every: float = 1.0,
         notice: Callable[[str], None] = lambda text: None) -> Run:
    """Work the run here until it is settled; `report(run)` is called about every `every` seconds,
    `notice(text)` when a lane waits for something that is down (and when it tries again).

    Raises StoppedHere when every lane stopped but the run is not done, naming each lane's reason
    (held by another worker, taken over): the run then goes on wherever those lanes are.
    Its log lines, its lanes' included, carry the run's id as job id and HERE_TASK as task."""
    with job_context(run_id, HERE_TASK):
        return _work(run_id, report, every, notice)


def _work(run_id: int, report: Callable[[Run], None], every: float, notice: Callable[[str], None]) -> Run:
    run = Run.objects.get(pk=run_id)
    if run.mode == Run.MODE_BATCH:
        return _work_batch(run, report)
    threads, errors, stops = [], [], {}
    for lane in leases.lanes_of(run):
        thread = threading.Thread(target=in_context(_work_lane), args=(run_id, lane.index, errors, stops, notice),
                                  name=f"run{run_id}-lane{lane.index}", daemon=True)
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
    if run.status in WORKING and stops:
        reasons = "; ".join(f"lane {index}: {why}" for index, why in sorted(stops.items()))
        raise StoppedHere(f"Run #{run_id} is {run.status} ({run.done}/{run.total} images) but this process stopped working it: "
                          f"{reasons}. It goes on where those lanes are worked; `launch_run --wait` follows it.")
    return run


def _pause(failures: int) -> float:
    """Seconds between tries of a lane whose chunk could do nothing (something it needs is down)."""
    cap = min(LANE_BACKOFF_MAX_S, max(0.05, settings.CPRT_PROVIDER_BACKOFF_MAX_S))
    return min(cap, max(0.05, settings.CPRT_PROVIDER_BACKOFF_S) * 2 ** min(failures - 1, 16)) * random.uniform(0.5, 1.0)


def _work_lane(run_id: int, index: int, errors: list, stops: dict, notice: Callable[[str], None]) -> None:
    """Chunk after chunk on one lane, each claimed and leased, until none of its images is missing or
    the run stops being worked (finished, cancelled, failed). A chunk that wrote nothing because
    something was down (the provider, Redis behind the rate limiter: its items were deferred) is followed by another
    after a pause that doubles up to LANE_BACKOFF_MAX_S (8 s): the lane waits for the outage to pass.
    A lane held by someone else (a live worker, or taken over after this process stalled) is left
    to them, its reason kept in `stops`."""
    failures = 0
    try:
        while Run.objects.filter(pk=run_id, status__in=WORKING).exists():
            lane = RunLane.objects.get(run_id=run_id, index=index)
            missing = leases.missing_of(lane)
            if not missing:
                return
            result = execution.run_chunk(run_id, missing, lane.width, lane=index, hand_on=False)
            if "skipped" in result:
                if "leased" in result["skipped"]:
                    stops[index] = "held by another worker (its lease is live)"
                return  # else the run is no longer worked (cancelled, finished)
            if "failed" in result or result.get("fatal"):
                return  # the run paused itself (or failed); its error says why
            if result.get("lease_lost"):
                stops[index] = "taken over by another worker (this lane's lease expired while it was worked here)"
                return
            if result.get("written") or result.get("duplicates"):
                failures = 0
                continue
            if not (result.get("deferred") or result.get("left_missing")):
                return  # nothing done and nothing deferred: the run was stopped while its requests waited
            failures += 1
            pause = _pause(failures)
            notice(f"run #{run_id} lane {index}: nothing could be done for {len(missing)} images "
                   f"({result.get('last_transient_error') or 'something it needs is down'}); trying again in {pause:.0f} s")
            deadline = time.monotonic() + pause
            while time.monotonic() < deadline and Run.objects.filter(pk=run_id, status__in=WORKING).exists():
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
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
