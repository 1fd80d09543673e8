"""Log lines that say when, how bad, where, and for which request and job.

Every process (web, worker, beat, gunicorn's master) logs one line per event with a timestamp,
level, logger, the request id and the job id: plain text by default, one JSON object per line with
`LOG_FORMAT=json`. The ids live in context variables: `RequestIdMiddleware` sets the request's (and
answers it in `X-Request-ID`), `core.dispatch` sends it along with the tasks a request launches, and
the worker's task hooks (cprt_site/celery.py) set it again, with the task's name and job id, around
each task; work done here rather than by a worker binds them with `job_context`. Threads do not
inherit context variables: a job's threads come from `ContextThreadPoolExecutor` or `in_context`,
so their lines carry the ids too. The request id stays set until the request is finished (Django's
`request_finished`), so that django.request's lines (a 4xx/5xx, logged after the middleware returned)
carry it as well. `logging_config()` is settings.LOGGING and gunicorn's logconfig_dict
(deploy/gunicorn.conf.py); every handler keeps the secret-scrubbing filter (core/secrets.py).
"""
from __future__ import annotations

import json
import logging
import re
import secrets
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from datetime import datetime, timezone

REQUEST_ID_HEADER = "X-Request-ID"
# The name of the Celery message header that carries the request id to a worker.
TASK_HEADER = "cprt_request_id"
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
job_id: ContextVar[str | None] = ContextVar("job_id", default=None)
task_name: ContextVar[str | None] = ContextVar("task_name", default=None)

_SANE_ID = re.compile(r"\A[A-Za-z0-9._-]{1,64}\Z")
# The record attributes a formatter shows besides the message; "-" where there is none.
CONTEXT_FIELDS = ("request_id", "job_id", "task")


def sane_request_id(value: str | None) -> str | None:
    """`value` if it can be a request id (1-64 characters of A-Z a-z 0-9 . _ -), else None."""
    return value if value and _SANE_ID.match(value) else None


def new_request_id() -> str:
    return secrets.token_hex(16)


def current_request_id() -> str | None:
    return request_id.get()


class RequestIdMiddleware:
    """Give each request an id: the caller's `X-Request-ID` when it is a sane token (a proxy's or a
    client's, so that their logs and ours line up), else a fresh one. It is in every log line of the
    request and in the response's `X-Request-ID`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rid = sane_request_id(request.headers.get(REQUEST_ID_HEADER)) or new_request_id()
        request.request_id = rid
        request_id.set(rid)  # cleared when the request is finished (clear_request_id), not here: see the module's doc
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = rid
        return response


def clear_request_id(**kwargs) -> None:
    """request_finished's receiver (core/apps.py): the lines that follow belong to no request."""
    request_id.set(None)


@contextmanager
def job_context(job: object, task: str):
    """Log lines inside carry `job` as job id and `task` as task name (work done outside a worker's task)."""
    tokens = (job_id.set(str(job)), task_name.set(task))
    try:
        yield
    finally:
        task_name.reset(tokens[1])
        job_id.reset(tokens[0])


def in_context(fn):
    """`fn` to run in another thread with the log ids of the code that calls this (a copy of its context)."""
    context = copy_context()
    return lambda *args, **kwargs: context.copy().run(fn, *args, **kwargs)  # a copy per call: threads may share `fn`


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A thread pool whose tasks log with the request id, job id and task name of the code that submitted them."""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(copy_context().run, fn, *args, **kwargs)


class ContextFilter(logging.Filter):
    """Puts the current request id, job id and task name on each record (unless the record already
    carries them, e.g. gunicorn's access line, logged after the request ended)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for field, var in (("request_id", request_id), ("job_id", job_id), ("task", task_name)):
            if getattr(record, field, None) is None:
                setattr(record, field, var.get())
        return True


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TextFormatter(logging.Formatter):
    """`2026-11-25T15:20:01.123Z INFO inference.execution [req=... job=... task=...] message`."""

    def format(self, record: logging.LogRecord) -> str:
        fields = (("req", "request_id"), ("job", "job_id"), ("task", "task"))
        context = " ".join(f"{name}={getattr(record, field, None) or '-'}" for name, field in fields)
        line = f"{_timestamp(record)} {record.levelname} {record.name} [{context}] {record.getMessage()}"
        extra = self._exception_text(record)
        return f"{line}\n{extra}" if extra else line

    def _exception_text(self, record: logging.LogRecord) -> str:
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        parts = [record.exc_text or "", self.formatStack(record.stack_info) if record.stack_info else ""]
        return "\n".join(p for p in parts if p)


class JsonFormatter(TextFormatter):
    """One JSON object per line: time, level, logger, message, request_id, job_id, task, process,
    and `exception` (the traceback text) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "time": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
            "job_id": getattr(record, "job_id", None),
            "task": getattr(record, "task", None),
            "process": record.process,
        }
        extra = self._exception_text(record)
        if extra:
            data["exception"] = extra
        return json.dumps(data, ensure_ascii=False, default=str)


FORMATS = ("text", "json")


def logging_config(level: str = "INFO", fmt: str = "text") -> dict:
    """The dictConfig of every process: one console handler with the context and scrub filters."""
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: one of {', '.join(FORMATS)}")
    handler = {"class": "logging.StreamHandler", "formatter": fmt, "filters": ["scrub_secrets", "log_context"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"scrub_secrets": {"()": "core.secrets.scrub_filter"}, "log_context": {"()": "core.logs.ContextFilter"}},
        "formatters": {"text": {"()": "core.logs.TextFormatter"}, "json": {"()": "core.logs.JsonFormatter"}},
        "handlers": {"console": handler},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "httpx": {"level": "WARNING"},
            "httpx2": {"level": "WARNING"},
            # gunicorn gives its loggers handlers of its own; these replace them, in its master and workers.
            "gunicorn.error": {"handlers": ["console"], "level": level, "propagate": False},
            "gunicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
        },
    }
