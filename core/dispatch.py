"""Sending background tasks: by name, when the transaction commits. One way for every app.

A service never imports its own `tasks` module (that is what closed import circles before): it names
the task (`"inference.run_chunk"`) and `send_on_commit` looks it up in the Celery app's registry,
inside `transaction.on_commit`, so a worker never sees an id whose row is not committed yet and a
rolled-back request sends nothing. `send_now` is for code that already runs after the commit (a
worker handing on its next chunk, the reconciler).

A job row's message goes through `send_job_on_commit` (or `send_job`): once the broker took it, the
row's `sent_at` says so. A send refused because the broker is away (BROKER_ERRORS) is logged and
leaves `sent_at` empty, without failing the request that already committed: the job stays queued
and the reconciler (core.reconcile) sends it when the broker is back. Tasks ignore their results
(CELERY_TASK_IGNORE_RESULT; outcomes are rows): a send whose result is tracked first subscribes to a
Redis result backend, and while Redis is away that fails with celery's RuntimeError ("Retry limit
exceeded ... result store"), not with a broker error.

Task arguments are ids and plain values; `task_args` validates them with a pydantic model in the
task (the one task-side check, replacing per-app copies).
"""
from __future__ import annotations

import logging
from typing import Any, TypeVar

import kombu.exceptions
import redis.exceptions
from celery import current_app
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError

from core.logs import TASK_HEADER, current_request_id

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "default"

# What a send raises while the broker is away (celery wraps most of them in kombu's OperationalError,
# after its own few quick publish retries).
BROKER_ERRORS: tuple[type[BaseException], ...] = (
    kombu.exceptions.OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError,
)


def registered(task_name: str):
    """The task registered under `task_name`. A web process has not imported the apps' `tasks`
    modules (a worker does at start): the first lookup makes Celery import them (autodiscovery).
    An unknown name raises celery's NotRegistered, so a misspelt name fails loudly, in tests too."""
    if task_name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[task_name]


def send_now(task_name: str, args: list | tuple = (), kwargs: dict | None = None, queue: str = DEFAULT_QUEUE) -> Any:
    """Send the registered task `task_name` now (the caller is past any transaction that matters).
    The current request id (core/logs.py) goes with it as a message header, for the worker's logs."""
    return _send(task_name, args, kwargs, queue, current_request_id())


def send_on_commit(task_name: str, args: list | tuple = (), kwargs: dict | None = None, queue: str = DEFAULT_QUEUE) -> None:
    """Send the task when the current transaction commits (at once outside a transaction), with the
    request id current now (the commit may come after the request's context ended)."""
    registered(task_name)  # check the name now, where the caller can see the error
    args, kwargs, rid = list(args), dict(kwargs or {}), current_request_id()
    transaction.on_commit(lambda: _send(task_name, args, kwargs, queue, rid))


def send_job(model, job_id: int, task_name: str, args: list | tuple | None = None, queue: str = DEFAULT_QUEUE,
             rid: str | None = None) -> bool:
    """Send the task for one row of the job model `model` now (default arguments: [job_id]) and
    record `sent_at` once the broker took it. False, logged, when the broker is away."""
    try:
        _send(task_name, [job_id] if args is None else args, {}, queue, rid if rid is not None else current_request_id())
    except BROKER_ERRORS as exc:
        log.warning("%s #%s: the broker did not take %s (%s: %s); the reconciler sends it when the broker is back",
                    model.__name__, job_id, task_name, type(exc).__name__, exc)
        return False
    model._default_manager.filter(pk=job_id).update(sent_at=timezone.now())
    return True


def send_job_on_commit(model, job_id: int, task_name: str, args: list | tuple | None = None, queue: str = DEFAULT_QUEUE) -> None:
    """`send_job` when the current transaction commits (a launch, a resume)."""
    registered(task_name)
    args, rid = (None if args is None else list(args)), current_request_id()
    transaction.on_commit(lambda: send_job(model, job_id, task_name, args, queue, rid))


def _send(task_name: str, args, kwargs, queue: str, rid: str | None) -> Any:
    headers = {TASK_HEADER: rid} if rid else None
    return registered(task_name).apply_async(args=list(args), kwargs=kwargs or {}, queue=queue, headers=headers)


Args = TypeVar("Args", bound=BaseModel)


class JobIdArgs(BaseModel):
    """The arguments of a task about one job row."""

    model_config = ConfigDict(strict=True, extra="forbid")
    job_id: PositiveInt


def task_args(model: type[Args], task_name: str, **values) -> Args:
    """Validate a task's arguments; a bad message fails with a message naming the task and field."""
    try:
        return model(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise ValueError(f"{task_name} refuses its input: {where}: {first['msg']}") from None
