"""The one job base under every kind of background work (runs and their lanes, exports, face
anonymization, provider batches, dataset builds): an abstract model, its status transitions declared
once, leases, and the heartbeat thread.

Rules every job keeps:
- **Claimed before it runs.** A worker takes a job (or a lane of it) with one conditional UPDATE
  that sets the lease owner and expiry (`Lease.claim`); of two deliveries of one message exactly one
  succeeds (PostgreSQL re-checks the condition on the locked row; SQLite has one writer at a time).
  The holder renews the lease with its heartbeat and stops when it cannot (it was taken over).
- **Statuses move only along `TRANSITIONS`**, with compare-and-set (`Job.move`): the UPDATE names
  the statuses it may leave, so two writers never both "finish" or "cancel" a job.
- **Progress lives in the row** (`done` / `total`, `heartbeat_at`); pages read it, never Celery.
- **Errors are scrubbed** of configured secrets (`error` is a ScrubbedTextField).
"""
from __future__ import annotations

import os
import socket
import threading
import uuid
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from .secrets import ScrubbedTextField

QUEUED, RUNNING, CANCELLING = "queued", "running", "cancelling"
CANCELLED, FINISHED, FAILED = "cancelled", "finished", "failed"
STATUSES = [(s, s) for s in (QUEUED, RUNNING, CANCELLING, CANCELLED, FINISHED, FAILED)]
ACTIVE_STATUSES = (QUEUED, RUNNING, CANCELLING)
FINAL_STATUSES = (CANCELLED, FINISHED, FAILED)

# name -> (statuses it may leave, status it enters). Every status change of every job is one of these.
TRANSITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "start": ((QUEUED, RUNNING), RUNNING),  # a claim (RUNNING: a takeover of an expired lease)
    "finish": ((QUEUED, RUNNING), FINISHED),
    "fail": (ACTIVE_STATUSES, FAILED),
    "request_cancel": ((QUEUED, RUNNING), CANCELLING),  # a worker confirms at its next heartbeat
    "cancel": (ACTIVE_STATUSES, CANCELLED),  # confirmed, or nobody was working on it
    "requeue": ((QUEUED, RUNNING, CANCELLED, FAILED, FINISHED), QUEUED),  # resume, retry, reconcile
}


class TransitionError(ValueError):
    """A status change that `TRANSITIONS` does not allow."""


def new_owner() -> str:
    """A token naming one execution of one task (host, process, random part)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class Job(models.Model):
    """What every background job row has. Subclasses add their own inputs and results."""

    STATUS_QUEUED, STATUS_RUNNING, STATUS_CANCELLING = QUEUED, RUNNING, CANCELLING
    STATUS_CANCELLED, STATUS_FINISHED, STATUS_FAILED = CANCELLED, FINISHED, FAILED
    STATUSES = STATUSES
    ACTIVE_STATUSES = ACTIVE_STATUSES

    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life from the worker.")
    lease_owner = models.CharField(max_length=200, blank=True, help_text="The task execution holding the job; empty when none.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = ScrubbedTextField(blank=True)  # never holds a configured secret (core.secrets)

    class Meta:
        abstract = True

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def percent_done(self) -> int:
        return min(100, int(100 * self.done / self.total)) if self.total else 0

    @classmethod
    def move(cls, pk: int, transition: str, *, where: Q | None = None, **fields) -> bool:
        """Apply a declared transition to one row with compare-and-set; True when this call moved it.
        `where` narrows the condition (e.g. the lease owner); `fields` are written with the status."""
        return cls.moves(cls._default_manager.filter(pk=pk), transition, where=where, **fields) == 1

    @classmethod
    def moves(cls, queryset, transition: str, *, where: Q | None = None, **fields) -> int:
        """`move` for every row of a queryset; returns how many moved."""
        if transition not in TRANSITIONS:
            raise TransitionError(f"unknown transition {transition!r}")
        sources, target = TRANSITIONS[transition]
        if target in FINAL_STATUSES:
            fields.setdefault("finished_at", timezone.now())
            fields.setdefault("lease_owner", "")
            fields.setdefault("lease_expires_at", None)
        elif target == QUEUED:
            fields.setdefault("finished_at", None)
        queryset = queryset.filter(status__in=sources)
        if where is not None:
            queryset = queryset.filter(where)
        return queryset.update(status=target, **fields)

    @classmethod
    def start(cls, lease: "Lease", *, where: Q | None = None, **fields) -> bool:
        """Claim: the "start" transition and the lease in one UPDATE, where the lease is free (and
        `where` holds); of two executions asking at once exactly one starts the job."""
        condition = lease.free_condition() if where is None else lease.free_condition() & where
        return cls.moves(lease.queryset, "start", where=condition, **lease.holding(), **fields) == 1

    def silent_for(self, seconds: float) -> bool:
        """No sign of life (heartbeat, else start, else creation) for `seconds`."""
        last = self.heartbeat_at or self.started_at or self.created_at
        return last is None or timezone.now() - last > timedelta(seconds=seconds)


class Lease:
    """One task execution's hold on one leased row (a job, or a lane of a run).

    `queryset` selects exactly that row; the row has an owner field and an expiry field (by default
    `lease_owner` and `lease_expires_at`). `seconds`: how long a lease lasts without renewal.
    """

    def __init__(self, queryset, seconds: float, owner: str | None = None, *,
                 owner_field: str = "lease_owner", expiry_field: str = "lease_expires_at"):
        self.queryset, self.seconds = queryset, float(seconds)
        self.owner = owner or new_owner()
        self.owner_field, self.expiry_field = owner_field, expiry_field

    def _expiry(self):
        return timezone.now() + timedelta(seconds=self.seconds)

    def free_condition(self) -> Q:
        """Nobody holds the row, this execution does, or its holder's lease expired."""
        now = timezone.now()
        return (Q(**{self.owner_field: ""}) | Q(**{self.owner_field: self.owner})
                | Q(**{f"{self.expiry_field}__lt": now}) | Q(**{f"{self.expiry_field}__isnull": True}))

    def holding(self) -> dict:
        """The field values that say this execution holds the row (owner and a fresh expiry)."""
        return {self.owner_field: self.owner, self.expiry_field: self._expiry()}

    def claim(self, where: Q | None = None, **fields) -> bool:
        """Take the row if it is free (and matches `where`); writes `fields` in the same UPDATE."""
        rows = self.queryset.filter(self.free_condition())
        if where is not None:
            rows = rows.filter(where)
        return rows.update(**{self.owner_field: self.owner, self.expiry_field: self._expiry()}, **fields) == 1

    def renew(self, where: Q | None = None, **fields) -> bool:
        """Extend the lease; False when another execution took the row (this one must stop)."""
        rows = self.queryset.filter(**{self.owner_field: self.owner})
        if where is not None:
            rows = rows.filter(where)
        return rows.update(**{self.expiry_field: self._expiry()}, **fields) == 1

    def release(self, **fields) -> None:
        self.queryset.filter(**{self.owner_field: self.owner}).update(**{self.owner_field: "", self.expiry_field: None}, **fields)

    def held(self) -> bool:
        return self.queryset.filter(**{self.owner_field: self.owner}).exists()


def expired_condition(owner_field: str = "lease_owner", expiry_field: str = "lease_expires_at") -> Q:
    """Rows claimed by a worker that stopped renewing its lease."""
    return Q(**{f"{expiry_field}__lt": timezone.now()}) & ~Q(**{owner_field: ""})


def live_condition(owner_field: str = "lease_owner", expiry_field: str = "lease_expires_at") -> Q:
    """Rows a worker holds right now."""
    return Q(**{f"{expiry_field}__gte": timezone.now()}) & ~Q(**{owner_field: ""})


class Heartbeat(threading.Thread):
    """Calls `beat()` every `every` seconds while a long step runs (a zip, an upload, a network pass
    that reports no progress). `beat` returns False when the job was taken from this worker; then
    `lost` is set and the thread stops. The thread closes its own database connection."""

    def __init__(self, beat: Callable[[], bool], every: float, name: str = "job-heartbeat"):
        super().__init__(name=name, daemon=True)
        self.beat, self.every = beat, float(every)
        self._stop_event = threading.Event()
        self.lost = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop_event.wait(self.every):
                if not self.beat():
                    self.lost.set()
                    return
        finally:
            connection.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)

    def __enter__(self) -> "Heartbeat":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
