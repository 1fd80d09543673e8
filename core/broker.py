"""What the Celery broker holds, for /readyz and /metrics: is it reachable, how many messages wait per
queue; and for the run reconciler: did the broker lose its messages (a Redis that came back empty).

Two transports (settings CELERY_BROKER_URL): Redis, where a queue is a list (one per priority step,
kombu's `name\\x06\\x16N`), and kombu's filesystem transport, where a waiting message is a file
`<time>_<uuid>.<queue>.msg` in the queue folder. Both answers are bounded by `timeout` seconds.
"""
from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import redis
from django.conf import settings
from django.utils import timezone
from redis.backoff import NoBackoff
from redis.retry import Retry

REDIS_PRIORITY_SEP = "\x06\x16"
REDIS_PRIORITY_STEPS = (0, 3, 6, 9)  # kombu's default priority_steps


def is_filesystem() -> bool:
    return settings.CELERY_BROKER_URL.startswith("filesystem://")


def queue_folder() -> Path:
    return Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))


def redis_client(timeout: float):
    # No retries: a probe answers now (redis-py otherwise retries a refused connection with backoff).
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))


def ping(timeout: float = 1.0) -> str:
    """A short description of the broker when it answers; raises when it does not."""
    if is_filesystem():
        folder = queue_folder()
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".ready-", suffix=".tmp"):
            pass
        return "the filesystem broker folder is writable"
    client = redis_client(timeout)
    try:
        client.ping()
    finally:
        client.close()
    return "redis answers PING"


def queue_depths(queues, timeout: float = 1.0) -> dict[str, int]:
    """Messages waiting (not yet taken by a worker) per queue name."""
    if is_filesystem():
        depths = dict.fromkeys(queues, 0)
        suffixes = {f"{queue}.msg": queue for queue in queues}
        with os.scandir(queue_folder()) as entries:
            for entry in entries:
                queue = suffixes.get(entry.name.partition(".")[2])
                if queue is not None:
                    depths[queue] += 1
        return depths
    client = redis_client(timeout)
    try:
        pipe = client.pipeline(transaction=False)
        for queue in queues:
            for step in REDIS_PRIORITY_STEPS:
                pipe.llen(f"{queue}{REDIS_PRIORITY_SEP}{step}" if step else queue)
        lengths = pipe.execute()
    finally:
        client.close()
    per_queue = len(REDIS_PRIORITY_STEPS)
    return {queue: sum(lengths[i * per_queue:(i + 1) * per_queue]) for i, queue in enumerate(queues)}


# Set in the broker's Redis by the reconciler (`emptied_at`); a Redis that restarted without its data
# (no persistence, a failover to an empty replica, FLUSHALL) no longer has it.
KEPT_KEY = "cprt:broker:kept"


def emptied_at(timeout: float = 1.0) -> datetime | None:
    """When the broker started without the messages sent before (a Redis restarted empty: its start),
    if it did since the last call; the key is set again here, so this answers once per loss. None for
    the filesystem broker (its messages are files), while Redis does not answer, and when nothing was
    lost. Messages sent before that time are gone; those sent after it are there. (The very first
    call also answers: Redis' start, before which nothing of this deployment was sent.) Seconds are
    whole, so the time may be up to a second late: a message sent in that second counts as lost,
    and is sent again, which is harmless.)"""
    if is_filesystem():
        return None
    client = redis_client(timeout)
    try:
        if not client.set(KEPT_KEY, "1", nx=True):
            return None
        uptime = int(client.info("server").get("uptime_in_seconds", 0))
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return None
    finally:
        client.close()
    return timezone.now() - timedelta(seconds=uptime)
