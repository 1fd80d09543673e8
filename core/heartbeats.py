"""Signs of life of the background processes, for /readyz (core/health.py).

A Celery worker writes a `ProcessHeartbeat` row per queue it consumes as soon as it is ready, then
every CPRT_WORKER_HEARTBEAT_S from a thread of its main process, and deletes its rows on a clean
shutdown; beat sends `core.beat_tick` every CPRT_BEAT_TICK_S, which a default-queue worker records.
The rows live in the database, not in the broker: the same check works on the filesystem broker
(which answers no `control.ping`) and on Redis, and says nothing false while Redis is away.
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection
from django.utils import timezone

from .jobs import Heartbeat
from .models import ProcessHeartbeat

logger = logging.getLogger(__name__)

_beating: dict[str, Heartbeat] = {}
_lock = threading.Lock()


def record(kind: str, node: str, queues: list[str]) -> None:
    """Upsert this process's rows (one per queue) with the current time."""
    now = timezone.now()
    for queue in queues:
        ProcessHeartbeat.objects.update_or_create(kind=kind, queue=queue, node=node, defaults={"seen_at": now})


def forget(kind: str, node: str) -> None:
    ProcessHeartbeat.objects.filter(kind=kind, node=node).delete()


def consumed_queues(app) -> list[str]:
    return sorted(app.amqp.queues.consume_from)


def on_worker_ready(sender, **kwargs) -> None:
    """celery `worker_ready` (sender: the consumer). Also sent again after a broker reconnect; one
    heartbeat thread per node all the same."""
    node, queues = sender.hostname, consumed_queues(sender.app)
    try:
        record("worker", node, queues)
    except Exception:  # the database may be down at this moment; the thread tries again
        logger.warning("could not record the heartbeat of %s", node, exc_info=True)
    finally:
        connection.close()
    with _lock:
        if node in _beating:
            return

        def beat() -> bool:
            try:
                record("worker", node, queues)
            except Exception:
                logger.warning("could not record the heartbeat of %s", node, exc_info=True)
            finally:
                connection.close()
            return True  # keep beating: a database outage passes

        _beating[node] = Heartbeat(beat, settings.CPRT_WORKER_HEARTBEAT_S, name="worker-heartbeat")
        _beating[node].start()


def on_worker_shutdown(sender, **kwargs) -> None:
    """celery `worker_shutdown` (sender: the WorkController): a stopped worker is no longer live."""
    node = sender.hostname
    with _lock:
        thread = _beating.pop(node, None)
    if thread is not None:
        thread.stop()
    try:
        forget("worker", node)
    except Exception:
        logger.warning("could not delete the heartbeat of %s", node, exc_info=True)
    finally:
        connection.close()


def beat_tick() -> dict:
    """The body of `core.beat_tick`: beat is alive and its periodic tasks reach a worker."""
    now = timezone.now()
    record("beat", "beat", [""])
    return {"seen_at": now.isoformat()}
