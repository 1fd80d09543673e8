"""Batch-mode settings (CPRT_BATCH_* and VLLM_BATCH_MODE in cprt_site/settings.py), with the providers' limits."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# The providers' documented per-batch limits (OpenAI: 50,000 requests and 200 MB per input file;
# Gemini: 20 MB for an inline request, 2 GB per uploaded file). The settings can only lower them.
PROVIDER_LIMITS = {
    "openai": {"requests": 50_000, "bytes": 200 * 1024 * 1024},
    "vllm": {"requests": 50_000, "bytes": 200 * 1024 * 1024},
    "gemini": {"requests": 50_000, "bytes": 2 * 1024 * 1024 * 1024},
}


def max_requests(provider: str) -> int:
    return min(PROVIDER_LIMITS[provider]["requests"], settings.CPRT_BATCH_MAX_REQUESTS)


def max_bytes(provider: str) -> int:
    return min(PROVIDER_LIMITS[provider]["bytes"], settings.CPRT_BATCH_MAX_BYTES)


def gemini_inline_max_bytes() -> int:
    """Gemini batches up to this size are sent inline; larger ones as an uploaded JSONL file."""
    return settings.CPRT_BATCH_GEMINI_INLINE_MAX_BYTES


def window_hours() -> float:
    """The providers' completion window; a batch still pending after it is reported as overdue."""
    return settings.CPRT_BATCH_WINDOW_H


def ingest_stale_after() -> float:
    """An ingest claimed this long ago without finishing (its worker died) may be claimed again."""
    return settings.CPRT_BATCH_INGEST_STALE_S


VLLM_BATCH_MODES = ("offline", "api")


def vllm_batch_mode() -> str:
    """`offline` (default: vLLM's server has no Batches endpoint; batch_export / run_batch / batch_ingest)
    or `api` (an OpenAI-compatible server that has one: submitted and polled like OpenAI). Anything
    else is refused here too (the settings refuse it at start-up), never taken for offline."""
    mode = settings.VLLM_BATCH_MODE
    if mode not in VLLM_BATCH_MODES:
        raise ImproperlyConfigured(f"VLLM_BATCH_MODE={mode!r} is not allowed: one of {', '.join(VLLM_BATCH_MODES)}.")
    return mode


def is_offline(provider: str) -> bool:
    """A vLLM batch run in `offline` mode: its request files go through batch_export / batch_ingest, never the poller."""
    return provider == "vllm" and vllm_batch_mode() != "api"
