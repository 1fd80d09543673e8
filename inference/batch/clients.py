"""The batch client of a run's provider (OpenAI and any OpenAI-compatible URL, vLLM, Gemini)."""
from __future__ import annotations

from ..providers import get_provider
from . import conf


def client_for(provider_name: str, model_name: str):
    provider = get_provider(provider_name, model_name)
    if provider_name == "gemini":
        from ..providers.gemini.batch import GeminiBatchClient

        return GeminiBatchClient(provider, conf.gemini_inline_max_bytes())
    from ..providers.openai.batch import OpenAIBatchClient

    return OpenAIBatchClient(provider)
