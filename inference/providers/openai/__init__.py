"""OpenAI (and any OpenAI-compatible endpoint via OPENAI_BASE_URL), through the official SDK."""
from .provider import OpenAIProvider

Provider = OpenAIProvider
__all__ = ["OpenAIProvider", "Provider"]
