"""Google Gemini through the google-genai SDK (GEMINI_API_KEY; GEMINI_BASE_URL for tests/proxies)."""
from .provider import GeminiProvider

Provider = GeminiProvider
__all__ = ["GeminiProvider", "Provider"]
