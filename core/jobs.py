"""The one job base under every kind of background work (runs and their lanes, exports, face
anonymization, provider batches, dataset builds): an abstract model, its status transitions declared
once, leases, the heartbeat thread, and `JobExecution` (one worker's hold on one job row).

Rules every job keeps:
- **Claimed before it runs.** A worker takes a job (or a lane of it) with one conditional UPDATE
  that sets the lease owner and expiry (`Lease.claim`); of two deliveries of one message exactly one
  succeeds (PostgreSQL re-checks the condition on the locked row; SQLite has one writer at a time).
  The holder renews the lease with its heartbeat and stops when it cannot (it was taken over).
- **Statuses move only along `TRANSITIONS`**, with compare-and-set (`Job.move`): the UPDATE names
  the statuses it may leave, so two writers never both "finish" or "cancel" a job.
- **Progress lives in the row** (`done` / `total`, `heartbeat_at`); pages read it, never Celery.
- **Errors are scrubbed** of configured secrets (`error` is a ScrubbedTextField).
- **A queued job's message is known to be out** once the broker took it (`sent_at`, written by
  core.dispatch.send_job); `queued_at` is when it was (last) queued. The reconciler (core.reconcile)
  sends again a queued job whose send failed or whose message the broker lost.
"""
from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db import OperationalError, connection, models
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
    queued_at = models.DateTimeField(default=timezone.now, help_text="When the job was (last) queued.")
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When the broker took its message; empty until one is known to be out.")
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
            fields.setdefault("queued_at", timezone.now())
            fields.setdefault("sent_at", None)  # until the new message is out (core.dispatch.send_job)
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


class Stopped(Exception):
    """The job was cancelled ("cancelled"), or taken from this worker ("lost"): stop and deliver nothing."""


class JobExecution:
    """One worker's execution of one job row: its lease, its heartbeat thread (`heartbeat`, started by
    the caller), the cancel the heartbeat noticed, the claim, the stop check and throttled progress.

    `model`: the Job subclass; `lease_seconds`: how long the lease lasts without renewal;
    `heartbeat_seconds`: how often the thread renews it. Options for the jobs that differ:
    - `skip_busy_beats`: a beat that meets an OperationalError (SQLite's "database is locked" while
      the job's own long write transaction runs) is skipped, not taken for a lost lease;
    - `check_reads_cancel`: `check` also reads CANCELLING from the database (not only what the last
      heartbeat saw), for a job whose last check guards one final commit;
    - `check_every_progress`: `progress` checks at every call (else only when it writes);
    - `progress_heartbeat`: a progress write is also a sign of life (writes `heartbeat_at`).
    `progress_every` (seconds between progress writes; the last one always lands) may be overridden
    by a subclass as a property, to be read at each call.
    """

    progress_every = 0.5

    def __init__(self, model: type[Job], job_id: int, lease_seconds: float, heartbeat_seconds: float, *, name: str = "job",
                 skip_busy_beats: bool = False, check_reads_cancel: bool = False, check_every_progress: bool = True,
                 progress_heartbeat: bool = False):
        self.model, self.job_id = model, job_id
        self.lease = Lease(model._default_manager.filter(pk=job_id), lease_seconds)
        self.mine = Q(lease_owner=self.lease.owner)
        self.cancelled = threading.Event()
        self.heartbeat = Heartbeat(self._beat, heartbeat_seconds, name=f"{name}-{job_id}-heartbeat")
        self.skip_busy_beats, self.check_reads_cancel = skip_busy_beats, check_reads_cancel
        self.check_every_progress, self.progress_heartbeat = check_every_progress, progress_heartbeat
        self._last_progress = float("-inf")

    def claim(self, where: Q | None = None, **fields) -> bool:
        """Take the job: queued, or running under a lease that expired (its worker is gone), and `where`.
        Of two deliveries at once exactly one starts it; a delivery while a live worker holds it does nothing."""
        now = timezone.now()
        fields = {"started_at": now, "heartbeat_at": now, "done": 0, "total": 0, "error": "", **fields}
        return self.model.start(self.lease, where=where, **fields)

    def _cancel_requested(self) -> bool:
        return self.lease.queryset.filter(status=CANCELLING).exists()

    def _beat(self) -> bool:
        """Renew the lease and write the heartbeat; notice a cancel. False when the job was taken from this worker."""
        try:
            if not self.lease.renew(where=Q(status__in=(RUNNING, CANCELLING)), heartbeat_at=timezone.now()):
                return False
            if self._cancel_requested():
                self.cancelled.set()
        except OperationalError:
            if not self.skip_busy_beats:
                raise
        return True

    def check(self) -> None:
        """Raise Stopped once a cancel was seen or the lease was lost."""
        if self.cancelled.is_set() or (self.check_reads_cancel and self._cancel_requested()):
            raise Stopped("cancelled")
        if self.heartbeat.lost.is_set():
            raise Stopped("lost")

    def progress(self, done: int, total: int) -> None:
        """A progress callback: done/total into the row (held by this execution), at most every `progress_every`."""
        if self.check_every_progress:
            self.check()
        now = time.monotonic()
        if done < total and now - self._last_progress < self.progress_every:
            return
        self._last_progress = now
        if not self.check_every_progress:
            self.check()
        fields = {"heartbeat_at": timezone.now()} if self.progress_heartbeat else {}
        self.model._default_manager.filter(self.mine, pk=self.job_id).update(done=done, total=total, **fields)
