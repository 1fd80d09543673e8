"""Sending a run's work to the workers: chunk messages per lane, and the steps of a batch run.

Tasks are sent by name through core.dispatch (`"inference.run_chunk"`, `"inference.batch_step"`,
`"inference.batch_resubmit"`), so nothing here imports `inference.tasks`, and the tasks (which
import the execution code) never come back here in a circle. `dispatch` runs after the launch,
resume or retry has committed (`dispatch_on_commit`) or in the reconciler; it deals the run's lanes
(inference.leases) and sends one chunk per lane. A lane's later chunks are sent by the worker that
ends the previous one (`send_chunk`).
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.dispatch import send_now, send_on_commit

from . import chunks, leases
from .items import missing_item_ids
from .models import Run, RunLane
from .providers import queue_for

RUN_CHUNK, BATCH_STEP, BATCH_RESUBMIT = "inference.run_chunk", "inference.batch_step", "inference.batch_resubmit"


def dispatch(run_id: int, item_ids: list[int] | None = None, lanes: list[int] | None = None, takeover: bool = False) -> int:
    """Send one chunk message per lane that has items among `item_ids` (default: every item still
    missing a result), or only for the lanes numbered in `lanes`; returns the number of messages.

    The run's concurrency is its bound on requests in flight, across all workers: its items are
    dealt into lanes (inference.leases), each with its share of the concurrency, so lanes run in
    parallel on separate worker processes and never exceed the total. A lane's chunks run one after
    the other: each chunk, when it ends, sends the next one for the lane's items still missing.
    `takeover` (a resume) frees lanes still leased by workers that are gone.
    """
    run = Run.objects.get(pk=run_id)
    wanted = set(missing_item_ids(run) if item_ids is None else item_ids)
    all_lanes = leases.lanes_of(run)
    Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    sent = 0
    for lane in all_lanes:
        if lanes is not None and lane.index not in lanes:
            continue
        share = [i for i in lane.item_ids if i in wanted]
        if share:
            leases.mark_dispatched(run.pk, [lane.index], takeover)  # before sending: a fast worker's claim must stay
            send_chunk(run, lane, share, len(all_lanes))
            sent += 1
    return sent


def dispatch_on_commit(run_id: int, item_ids: list[int] | None = None, takeover: bool = False) -> None:
    """`dispatch` once the current transaction commits (a launch, a resume, an online retry)."""
    args = (run_id,) if item_ids is None else (run_id, item_ids)
    options = {"takeover": True} if takeover else {}
    transaction.on_commit(lambda: dispatch(*args, **options))


def send_chunk(run: Run, lane: RunLane, missing: list[int], lanes: int) -> None:
    """One chunk message for a lane: its first missing items, as many as inference.chunks allows.
    Sent now: the caller (dispatch, a worker handing on) runs after the commit that matters."""
    size = chunks.size(run.provider, run.task, lane.width, lanes)
    send_now(RUN_CHUNK, [run.pk, missing[:size], lane.width], {"lane": lane.index}, queue=queue_for(run.provider))


def start_batch(run_id: int) -> None:
    """A batch run's first step (submission), on a worker of the provider's queue, once this commits."""
    run = Run.objects.only("provider").get(pk=run_id)
    send_on_commit(BATCH_STEP, [run_id], queue=queue_for(run.provider))


def resubmit_batch(run_id: int) -> None:
    """Failed batch requests into a follow-up batch, on a worker (the upload can take a while), once this commits."""
    run = Run.objects.only("provider").get(pk=run_id)
    send_on_commit(BATCH_RESUBMIT, [run_id], queue=queue_for(run.provider))
