"""Lanes and their leases: a run's work is split into lanes, and one worker at a time works on a lane.

Why: the broker may deliver a chunk twice (a redelivery after the visibility timeout, a worker lost
before its ack, a reconciler re-dispatch), and two copies of a chunk running side by side both pay
the provider for the same items. Rules:
- Each item belongs to one lane for the run's whole life (item i of the sorted list: lane i mod n),
  so two messages about one item are always about the same lane.
- A chunk task claims its lane's lease (`core.jobs.Lease` on `RunLane.owner`) with one conditional
  UPDATE (free, already its own, or expired) before it reads which items still need a result; a
  message whose lane is leased by a live worker does nothing. The worker renews the lease with its
  heartbeat and stops when it cannot (it was taken over); it releases the lease when the chunk ends.
- Before its requests go out, the worker writes the lane's `in_flight` items (those it is about to
  send, awaits, or holds unwritten answers for); a chunk that ends normally clears it. A worker that
  stops mid-request leaves it behind: the next claim counts those of its items that have no result as
  resent (`Run.items_resent`: their requests may have been paid for and are sent again), shown
  beside the run's cost.
- The reconciler re-dispatches a lane only when its lease EXPIRED (a worker claimed it and went
  silent for CPRT_RUN_STALE_S). A lane nobody has claimed yet is queued work: it waits for a
  worker, however long, and is never sent again by the reconciler.
"""
from __future__ import annotations

import math

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.jobs import Lease, expired_condition, live_condition

from . import kinds
from .models import Run, RunLane, RunResult

OWNER_FIELD = "owner"  # RunLane's lease owner (the job base's default is `lease_owner`)


def lane_widths(concurrency: int) -> list[int]:
    """How a run's concurrency is split into lanes; the widths add up to exactly `concurrency`."""
    lanes = max(1, math.ceil(concurrency / settings.CPRT_RUN_LANE_CONCURRENCY))
    return [concurrency // lanes + (1 if i < concurrency % lanes else 0) for i in range(lanes)]


def lease_seconds() -> float:
    """A lane whose worker has not renewed its lease for this long is re-dispatched."""
    return float(settings.CPRT_RUN_STALE_S)


def lane_lease(run_id: int, index: int, owner: str | None = None) -> Lease:
    """One task execution's hold on one lane (claim / renew / release, see core.jobs.Lease)."""
    return Lease(RunLane.objects.filter(run_id=run_id, index=index), lease_seconds(), owner, owner_field=OWNER_FIELD)


def reserve(run_id: int, index: int, item_ids) -> None:
    """Write the lane's in-flight items before their requests go out (an empty list when none)."""
    RunLane.objects.filter(run_id=run_id, index=index).update(in_flight=sorted(item_ids))


def count_resent(run_id: int, index: int) -> int:
    """Called by the lane's new holder right after its claim: the items a stopped worker left in
    flight that have no result are about to be sent again; count them on the run, clear the list."""
    left = RunLane.objects.filter(run_id=run_id, index=index).values_list("in_flight", flat=True).first()
    if not left:
        return 0
    answered = set(RunResult.objects.filter(run_id=run_id, item_id__in=left).values_list("item_id", flat=True))
    resent = len([i for i in left if i not in answered])
    with transaction.atomic():
        RunLane.objects.filter(run_id=run_id, index=index).update(in_flight=[])
        if resent:
            Run.objects.filter(pk=run_id).update(items_resent=F("items_resent") + resent)
    return resent


def lanes_of(run: Run) -> list[RunLane]:
    """The run's lanes, dealt on first use (idempotent, safe when two dispatches race)."""
    lanes = list(RunLane.objects.filter(run=run).order_by("index"))
    if lanes:
        return lanes
    widths = lane_widths(run.concurrency)
    ids = sorted(run.item_ids)
    RunLane.objects.bulk_create(
        [RunLane(run=run, index=i, width=w, item_ids=ids[i :: len(widths)]) for i, w in enumerate(widths)],
        ignore_conflicts=True,
    )
    return list(RunLane.objects.filter(run=run).order_by("index"))


def missing_of(lane: RunLane) -> list[int]:
    """The lane's items that still exist with image bytes (their kind says) and have no result yet, in lane order."""
    done = set(RunResult.objects.filter(run_id=lane.run_id, item_id__in=lane.item_ids).values_list("item_id", flat=True))
    run = Run.objects.get(pk=lane.run_id)
    existing = kinds.get(run.task)(run).existing([i for i in lane.item_ids if i not in done], with_bytes=True)
    return [i for i in lane.item_ids if i in existing and i not in done]


def mark_dispatched(run_id: int, indexes: list[int], takeover: bool = False) -> None:
    """The lanes' messages are about to be sent: a lane whose lease expired becomes queued work, held
    by nobody (its silent worker, should it come back, fails to renew and stops). A live lease stays,
    unless `takeover` (a person resumed the run: they say its workers are gone)."""
    lanes = RunLane.objects.filter(run_id=run_id, index__in=indexes)
    lanes.update(dispatched_at=timezone.now(), dispatches=F("dispatches") + 1)
    (lanes if takeover else lanes.filter(lease_expires_at__lt=timezone.now())).update(owner="", lease_expires_at=None)


def expired(run: Run) -> list[RunLane]:
    """Lanes claimed by a worker that stopped renewing its lease."""
    return list(RunLane.objects.filter(expired_condition(OWNER_FIELD), run=run).order_by("index"))


def live(run: Run) -> bool:
    """Is a worker holding one of the run's lanes right now?"""
    return RunLane.objects.filter(live_condition(OWNER_FIELD), run=run).exists()
