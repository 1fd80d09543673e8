"""How many images one chunk task may hold, and when a chunk must stop taking new ones.

A chunk that runs past the broker's visibility timeout is delivered a second time (Redis), and a
task past its time limit is killed. So a chunk is sized from the provider's rate limit to end in
about CPRT_RUN_CHUNK_TARGET_S, and a chunk that is still busy at its deadline (a slower provider, a
rate limit shared with other runs) stops taking images and hands the rest of them to a new task.
"""
from __future__ import annotations

from django.conf import settings

from .ratelimit import max_rpm



def size(provider: str, task: str, width: int, lanes: int) -> int:
    """Images per chunk for one lane of `width` requests in flight, out of `lanes`.

    Without a rate limit: up to 200 x the width (a chunk's window stays full until its last `width`
    requests, and the next chunk starts only after a broker round trip). With one: no more than the
    lane's share of the limit gets through in CPRT_RUN_CHUNK_TARGET_S.
    """
    base = max(settings.CPRT_RUN_CHUNK_SIZE, 200 * width)
    rpm = max_rpm(provider)
    if rpm <= 0:
        return base
    from .kinds import get

    images_per_s = rpm / 60.0 / max(1, lanes) / len(get(task).stages)
    return max(1, min(base, int(float(settings.CPRT_RUN_CHUNK_TARGET_S) * images_per_s)))


def deadline_s() -> float:
    """Seconds after which a chunk takes no new image: well before the soft time limit, so that the
    requests in flight can finish and the results be written."""
    soft = getattr(settings, "CELERY_TASK_SOFT_TIME_LIMIT", None)
    target = 2 * float(settings.CPRT_RUN_CHUNK_TARGET_S)
    return min(target, 0.6 * soft) if soft else target
