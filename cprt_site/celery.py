"""The Celery app. Start a worker with: ``celery -A cprt_site worker --loglevel INFO``.

Queues: ``default`` (housekeeping, exports), ``api`` (OpenAI/Gemini runs), ``gpu`` (vLLM runs).
A worker started without ``-Q`` consumes all three, which is what the embedded setup wants.
"""
import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")

app = Celery("cprt_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("api"), Queue("gpu"))
app.autodiscover_tasks()


@app.task(name="cprt_site.ping")
def ping(value: str = "pong") -> str:
    """Round-trip check used by the broker tests and `make check-worker`."""
    return value
