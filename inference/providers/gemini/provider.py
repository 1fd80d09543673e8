"""generateContent with `response_mime_type=application/json` and a JSON schema; images inline, in order.

Blocks are refusals: a prompt blocked by safety filters (prompt_feedback.block_reason), or a
candidate stopped for SAFETY, PROHIBITED_CONTENT, BLOCKLIST, SPII or an image-safety reason.
The SDK's own retries are off (its default); the run service retries.
"""
from __future__ import annotations

import re
import time

from django.conf import settings

from core.lazy import lazy_module

from ..base import (
    Availability,
    FatalProviderError,
    ModelRequest,
    NotTheAPI,
    PermanentError,
    Provider,
    ProviderReply,
    ProviderUnavailable,
    RetryableError,
    fatal_status,
    item_specific,
    parse_retry_after,
    retryable_status,
    shared_client,
)

# google-genai is imported on first use: half a second at start-up otherwise.
genai = lazy_module("google.genai")
genai_errors = lazy_module("google.genai.errors")
types = lazy_module("google.genai.types")

try:  # The SDK talks httpx2; plain httpx may be present too. Either one's timeouts are retryable.
    import httpx2 as _httpx2
except ImportError:  # pragma: no cover
    _httpx2 = None
try:
    import httpx as _httpx
except ImportError:  # pragma: no cover
    _httpx = None

_TRANSIENT = tuple(
    cls for mod in (_httpx2, _httpx) if mod is not None for cls in (mod.TimeoutException, mod.TransportError)
)
_TIMEOUTS = tuple(mod.TimeoutException for mod in (_httpx2, _httpx) if mod is not None)

REFUSAL_FINISH_REASONS = {
    "SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "RECITATION",
}
_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s\Z")


@shared_client
def _client(api_key: str, base_url: str, timeout: float) -> genai.Client:
    options = types.HttpOptions(timeout=max(1, int(timeout * 1000)), base_url=base_url or None)
    return genai.Client(api_key=api_key, http_options=options)


class GeminiProvider(Provider):
    name = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com"

    @classmethod
    def base_url(cls) -> str:
        return settings.GEMINI_BASE_URL
    label = "Google Gemini"
    default_model = "gemini-3-flash-preview"
    queue = "api"

    @classmethod
    def availability(cls) -> Availability:
        shown = {"base_url": settings.GEMINI_BASE_URL or "Gemini Developer API (default)", "max_rpm": settings.GEMINI_MAX_RPM}
        if not settings.GEMINI_API_KEY:
            return Availability(False, "GEMINI_API_KEY is not set in the environment.", shown)
        return Availability(True, "", shown)

    def client(self) -> genai.Client:
        if not settings.GEMINI_API_KEY:
            raise ProviderUnavailable("GEMINI_API_KEY is not set in the worker's environment.")
        return _client(settings.GEMINI_API_KEY, settings.GEMINI_BASE_URL, settings.CPRT_PROVIDER_TIMEOUT_S)

    def contents_and_config(self, request: ModelRequest) -> tuple[list, types.GenerateContentConfig]:
        """What generate_content gets (also one inline request of a batch)."""
        parts = [types.Part.from_bytes(data=image, mime_type=mime or "image/jpeg") for image, mime in request.images]
        parts.append(types.Part.from_text(text=request.user))
        config = types.GenerateContentConfig(
            system_instruction=request.system,
            response_mime_type="application/json",
            response_json_schema=request.schema,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            **self.request_params(),
        )
        return [types.Content(role="user", parts=parts)], config

    def generate(self, request: ModelRequest) -> ProviderReply:
        contents, config = self.contents_and_config(request)
        started = time.monotonic()
        try:
            client = self.client()  # keep a reference for the whole call (see _client)
            response = client.models.generate_content(model=self.model_name, contents=contents, config=config)
        except genai_errors.APIError as exc:
            raise _api_error(exc) from None
        except _TIMEOUTS as exc:
            raise RetryableError(f"timed out after {settings.CPRT_PROVIDER_TIMEOUT_S:g}s", {"error": str(exc)}) from None
        except _TRANSIENT as exc:
            raise RetryableError(f"connection error: {exc}", {"error": str(exc)}) from None
        except ValueError as exc:  # the SDK could not read a 2xx body as JSON (a proxy's HTML page)
            raise NotTheAPI(f"the answer is not the API's JSON: {exc}", {"error": str(exc)}) from None
        if not (response.candidates or response.prompt_feedback or response.usage_metadata):
            raise NotTheAPI("the answer is not a generateContent response (no candidates, feedback or usage)",
                            {"body": response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response", "parsed"})})
        return reply_from_response(response, int((time.monotonic() - started) * 1000))


def reply_from_response(response: types.GenerateContentResponse, latency_ms: int = 0) -> ProviderReply:
    """A GenerateContentResponse (online, or one response of a batch) -> ProviderReply."""
    raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response", "parsed"})
    usage = response.usage_metadata
    tokens_in = (usage.prompt_token_count or 0) if usage else 0
    tokens_out = ((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)) if usage else 0
    common = {"raw": raw, "tokens_in": tokens_in, "tokens_out": tokens_out, "latency_ms": latency_ms}
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        reason = _enum_name(feedback.block_reason)
        detail = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
        return ProviderReply(text=None, refusal=f"prompt blocked ({reason}){detail}", **common)
    if not response.candidates:
        return ProviderReply(text=None, **common)
    candidate = response.candidates[0]
    finish = _enum_name(candidate.finish_reason) if candidate.finish_reason is not None else ""
    text = None
    if candidate.content is not None and candidate.content.parts:
        pieces = [p.text for p in candidate.content.parts if p.text is not None and not p.thought]
        text = "".join(pieces) if pieces else None
    if finish in REFUSAL_FINISH_REASONS:
        return ProviderReply(text=text, refusal=f"response blocked ({finish})", finish_reason=finish, **common)
    return ProviderReply(text=text, finish_reason=finish, **common)


def _enum_name(value) -> str:
    return getattr(value, "value", None) or str(value)


def _api_error(exc: genai_errors.APIError):
    status = int(exc.code or 0)
    raw = {"status": status, "body": exc.details if isinstance(exc.details, (dict, list)) else str(exc.details)}
    message = f"HTTP {status}: {exc.message or exc.status or ''}".strip()
    if retryable_status(status):
        return RetryableError(message, raw, status, _retry_after(exc))
    if fatal_status(status):
        return FatalProviderError(message, raw, status)
    return PermanentError(message, raw, status, item_specific=item_specific(message, raw["body"]))


def _retry_after(exc: genai_errors.APIError) -> float | None:
    """Retry-After header, else the google.rpc.RetryInfo `retryDelay` ("12s") in the error details."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        seconds = parse_retry_after(headers.get("retry-after"))
        if seconds is not None:
            return seconds
    details = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else {}
    for item in details.get("details", []) if isinstance(details, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            match = _DELAY.match(str(item.get("retryDelay", "")))
            if match:
                return min(float(match.group(1)), 3600.0)
    return None
