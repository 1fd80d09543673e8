"""The Celery app. Start a worker with: ``celery -A cprt_site worker --loglevel INFO``.

Queues: ``default`` (housekeeping, exports), ``api`` (OpenAI/Gemini runs), ``gpu`` (vLLM runs).
A worker started without ``-Q`` consumes all three, which is what the embedded setup wants.
"""
import os

from celery import Celery, Task
from celery.exceptions import Ignore, Reject, Retry
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")


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


@app.task(name="cprt_site.ping")
def ping(value: str = "pong") -> str:
    """Round-trip check used by the broker tests and `make check-worker`."""
    return value
