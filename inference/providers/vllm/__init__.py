"""Open models served by vLLM's OpenAI-compatible server (VLLM_BASE_URL), on the gpu queue."""
from .provider import VLLMProvider

Provider = VLLMProvider
__all__ = ["VLLMProvider", "Provider"]
