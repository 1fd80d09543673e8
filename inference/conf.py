"""Typed settings for runs and providers, read from Django settings first, then the environment.

settings.py (shared) holds the provider credentials; the run knobs below live here so that the
inference app owns them. Every value can be overridden in tests through Django's `settings`.
"""
from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def _raw(name: str):
    if hasattr(settings, name):
        return getattr(settings, name)
    return os.environ.get(name)


def string(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value in (None, "") else str(value)


def integer(name: str, default: int, minimum: int = 0) -> int:
    value = _raw(name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


def number(name: str, default: float, minimum: float = 0.0) -> float:
    value = _raw(name)
    if value in (None, ""):
        return default
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if result < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {result}")
    return result


def request_timeout() -> float:
    """Seconds one provider request may take before it counts as a (retryable) timeout."""
    return number("CPRT_PROVIDER_TIMEOUT_S", 120.0, minimum=0.05)


def max_attempts() -> int:
    """Attempts per request (first try included) for retryable failures."""
    return integer("CPRT_PROVIDER_MAX_ATTEMPTS", 5, minimum=1)


def backoff_base() -> float:
    return number("CPRT_PROVIDER_BACKOFF_S", 1.0)


def backoff_cap() -> float:
    return number("CPRT_PROVIDER_BACKOFF_MAX_S", 60.0)


def chunk_size() -> int:
    """Minimum images per chunk task (chunks hold up to 200 x the lane's concurrency, see services.dispatch)."""
    return integer("CPRT_RUN_CHUNK_SIZE", 50, minimum=1)


def lane_concurrency() -> int:
    """Most requests one chunk task keeps in flight. A run with a higher concurrency is split into
    ceil(concurrency / this) lanes (Celery chains) that run on separate worker processes, because
    one Python process tops out at ~200 requests/s of SDK work, and loses efficiency to GIL
    contention well before that (measured: 0.93 of ideal at 16 in flight, 0.86 at 32)."""
    return integer("CPRT_RUN_LANE_CONCURRENCY", 16, minimum=1)


def stale_after() -> float:
    """A running run with no heartbeat for this long is re-dispatched by the reconciler."""
    return number("CPRT_RUN_STALE_S", 180.0, minimum=1.0)


def heartbeat_every() -> float:
    return number("CPRT_RUN_HEARTBEAT_S", 2.0, minimum=0.05)


def reconcile_every() -> float:
    return number("CPRT_RECONCILE_EVERY_S", 60.0, minimum=1.0)


def max_rpm(provider: str) -> int:
    """Requests per minute allowed for a provider, shared by every worker; 0 means no limit."""
    defaults = {"openai": 500, "gemini": 300, "vllm": 0}
    return integer(f"{provider.upper()}_MAX_RPM", defaults.get(provider, 0))


def vllm_max_pixels() -> int:
    """Pixel budget for images sent to vLLM (downscaled client-side, aspect ratio kept)."""
    return integer("VLLM_MAX_PIXELS", 1_003_520, minimum=1024)


def rate_limit_redis_url() -> str:
    """Redis for the shared rate limiter: CPRT_RATE_LIMIT_URL, else the broker when it is Redis."""
    explicit = string("CPRT_RATE_LIMIT_URL")
    if explicit:
        return explicit
    broker = str(getattr(settings, "CELERY_BROKER_URL", ""))
    return broker if broker.startswith(("redis://", "rediss://")) else ""
