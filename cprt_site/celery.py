"""The Celery app. Start a worker with: ``celery -A cprt_site worker --loglevel INFO``.

Queues: ``default`` (housekeeping, exports), ``api`` (OpenAI/Gemini runs), ``gpu`` (vLLM runs).
A worker started without ``-Q`` consumes all three, which is what the embedded setup wants.

Logging is Django's (settings.LOGGING, core/logs.py), not Celery's own: same format as the web
process, `LOG_LEVEL` rules, and each line of a task carries the request id that launched it (the
`cprt_request_id` message header), the task's name and its job id.
"""
import inspect
import logging
import os

from celery import Celery, Task, signals
from celery.exceptions import Ignore, Reject, Retry
from kombu import Queue

from cprt_site import broker_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
broker_transport.install()  # a Redis outage must not make a worker exit; a filesystem message is never read half written


class SecretScrubbedError(Exception):
    """A task failed with a message that held a configured secret; this carries the scrubbed text."""


class ScrubbingTask(Task):
    """Every task's return value and failure are scrubbed of configured secrets before the result
    backend stores them (and before the worker logs them)."""

    def __call__(self, *args, **kwargs):
        from core.secrets import scrub

        try:
            return scrub(super().__call__(*args, **kwargs))
        except (Retry, Ignore, Reject):
            raise
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            clean = scrub(text)
            if clean != text or scrub(repr(exc.args)) != repr(exc.args):
                raise SecretScrubbedError(clean) from None
            raise


app = Celery("cprt_site", task_cls=ScrubbingTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("api"), Queue("gpu"))
app.autodiscover_tasks()


@app.task(name="cprt_site.ping", ignore_result=False)  # the round-trip check reads its result
def ping(value: str = "pong") -> str:
    """Round-trip check used by the broker tests and `make check-worker`; its log line shows the
    request id that sent it (tests/core/test_logs.py)."""
    logging.getLogger(__name__).info("ping: %s", value)
    return value


@signals.setup_logging.connect
def use_django_logging(**kwargs) -> None:
    """A receiver here keeps Celery from installing its own handlers and format on the root logger
    (worker and beat); the configuration is settings.LOGGING, which django.setup() applies."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


@signals.before_task_publish.connect
def send_the_request_id(headers=None, **kwargs) -> None:
    """A task sent while a request (or a task that a request launched) is current carries its id."""
    from core.logs import TASK_HEADER, current_request_id

    rid = current_request_id()
    if rid and headers is not None and not headers.get(TASK_HEADER):
        headers[TASK_HEADER] = rid


def job_id_of(task, args, kwargs) -> str | None:
    """The job (or run) id among a task's arguments (`job_id`, `run_id`), if it has one."""
    try:
        bound = inspect.signature(task.run).bind_partial(*(args or ()), **(kwargs or {})).arguments
    except (TypeError, ValueError):
        return None
    for name in ("job_id", "run_id"):
        if bound.get(name) is not None:
            return str(bound[name])
    return None


_log_context_tokens: dict[str, tuple] = {}


@signals.task_prerun.connect
def bind_task_log_context(task_id=None, task=None, args=None, kwargs=None, **extra) -> None:
    """Each log line of the task carries the request id that launched it, its name and job id."""
    from core.logs import TASK_HEADER, job_id, request_id, sane_request_id, task_name

    request = task.request
    rid = getattr(request, TASK_HEADER, None) or (getattr(request, "headers", None) or {}).get(TASK_HEADER)
    _log_context_tokens[task_id] = (
        request_id.set(sane_request_id(rid) if isinstance(rid, str) else None),
        job_id.set(job_id_of(task, args, kwargs)),
        task_name.set(task.name),
    )


@signals.task_postrun.connect
def unbind_task_log_context(task_id=None, **extra) -> None:
    from core.logs import job_id, request_id, task_name

    tokens = _log_context_tokens.pop(task_id, None)
    if tokens:
        for var, token in zip((request_id, job_id, task_name), tokens):
            var.reset(token)
