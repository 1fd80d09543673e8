"""Lanes and their leases: a run's work is split into lanes, and one worker at a time works on a lane.

Why: the broker may deliver a chunk twice (a redelivery after the visibility timeout, a worker lost
before its ack, a reconciler re-dispatch), and two copies of a chunk running side by side both pay
the provider for the same images. Rules:
- Each image belongs to one lane for the run's whole life (image i of the sorted list: lane i mod n),
  so two messages about one image are always about the same lane.
- A chunk task claims its lane's lease with one conditional UPDATE (free, already its own, or
  expired) before it reads which images still need a result; a message whose lane is leased by a
  live worker does nothing. The worker renews the lease with its heartbeat and stops when it cannot
  (it was taken over); it releases the lease when the chunk ends.
- The reconciler re-dispatches a lane only when its lease EXPIRED (a worker claimed it and went
  silent for CPRT_RUN_STALE_S). A lane nobody has claimed yet is queued work: it waits for a
  worker, however long, and is never sent again by the reconciler.
"""
from __future__ import annotations

import math
import os
import socket
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from .models import Run, RunLane


def lane_widths(concurrency: int) -> list[int]:
    """How a run's concurrency is split into lanes; the widths add up to exactly `concurrency`."""
    lanes = max(1, math.ceil(concurrency / settings.CPRT_RUN_LANE_CONCURRENCY))
    return [concurrency // lanes + (1 if i < concurrency % lanes else 0) for i in range(lanes)]


def lease_seconds() -> float:
    """A lane whose worker has not renewed its lease for this long is re-dispatched."""
    return float(settings.CPRT_RUN_STALE_S)


def new_owner() -> str:
    """A token naming one execution of one task (host, process, random part)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def lanes_of(run: Run) -> list[RunLane]:
    """The run's lanes, dealt on first use (idempotent, safe when two dispatches race)."""
    lanes = list(RunLane.objects.filter(run=run).order_by("index"))
    if lanes:
        return lanes
    widths = lane_widths(run.concurrency)
    ids = sorted(run.image_ids)
    RunLane.objects.bulk_create(
        [RunLane(run=run, index=i, width=w, image_ids=ids[i :: len(widths)]) for i, w in enumerate(widths)],
        ignore_conflicts=True,
    )
    return list(RunLane.objects.filter(run=run).order_by("index"))


def mark_dispatched(run_id: int, indexes: list[int], takeover: bool = False) -> None:
    """The lanes' messages are about to be sent: a lane whose lease expired becomes queued work, held
    by nobody (its silent worker, should it come back, fails to renew and stops). A live lease stays,
    unless `takeover` (a person resumed the run: they say its workers are gone)."""
    lanes = RunLane.objects.filter(run_id=run_id, index__in=indexes)
    lanes.update(dispatched_at=timezone.now(), dispatches=F("dispatches") + 1)
    (lanes if takeover else lanes.filter(lease_expires_at__lt=timezone.now())).update(owner="", lease_expires_at=None)


def expired(run: Run) -> list[RunLane]:
    """Lanes claimed by a worker that stopped renewing its lease."""
    return list(RunLane.objects.filter(run=run, lease_expires_at__lt=timezone.now()).exclude(owner="").order_by("index"))


def live(run: Run) -> bool:
    """Is a worker holding one of the run's lanes right now?"""
    return RunLane.objects.filter(run=run, lease_expires_at__gte=timezone.now()).exclude(owner="").exists()


class Lease:
    """One task execution's hold on one lane."""

    def __init__(self, run_id: int, index: int, owner: str | None = None):
        self.run_id, self.index = run_id, index
        self.owner = owner or new_owner()

    def _lane(self):
        return RunLane.objects.filter(run_id=self.run_id, index=self.index)

    def _expiry(self):
        return timezone.now() + timedelta(seconds=lease_seconds())

    def claim(self) -> bool:
        """Take the lane if nobody holds it, or its holder's lease expired. One UPDATE, so of two
        concurrent claims exactly one succeeds (PostgreSQL re-checks the condition on the locked row;
        SQLite runs one writer at a time)."""
        now = timezone.now()
        free = Q(owner="") | Q(owner=self.owner) | Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True)
        return self._lane().filter(free).update(owner=self.owner, lease_expires_at=self._expiry()) == 1

    def renew(self) -> bool:
        """Extend the lease; False when another worker took the lane over (this one must stop)."""
        return self._lane().filter(owner=self.owner).update(lease_expires_at=self._expiry()) == 1

    def release(self) -> None:
        self._lane().filter(owner=self.owner).update(owner="", lease_expires_at=None)
