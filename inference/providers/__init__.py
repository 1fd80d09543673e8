"""Model providers: one sub-package each (openai, gemini, vllm, onnx), all with the interface in `base`."""
from __future__ import annotations

from .base import (  # noqa: F401 - re-exported for callers
    Availability,
    FatalProviderError,
    ModelRequest,
    NotTheAPI,
    PermanentError,
    Provider,
    ProviderError,
    ProviderReply,
    ProviderUnavailable,
    RetryableError,
)
from .gemini import GeminiProvider
from .onnx import OnnxProvider
from .openai import OpenAIProvider
from .vllm import VLLMProvider

PROVIDERS: dict[str, type[Provider]] = {p.name: p for p in (OpenAIProvider, GeminiProvider, VLLMProvider, OnnxProvider)}


def get_provider(name: str, model_name: str) -> Provider:
    try:
        cls = PROVIDERS[name]
    except KeyError:
        raise ProviderUnavailable(f"Unknown provider {name!r}.") from None
    return cls(model_name)


def availability() -> dict[str, Availability]:
    return {name: cls.availability() for name, cls in PROVIDERS.items()}


def queue_for(name: str) -> str:
    return PROVIDERS[name].queue
