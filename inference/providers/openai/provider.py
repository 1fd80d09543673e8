"""Chat Completions with a strict JSON-schema response format, each image as a data URL.

The SDK's own retries are off (max_retries=0): the run service retries, so that every attempt goes
through the shared rate limiter and honours Retry-After.

The request body is built here as plain JSON and sent with the SDK's documented `client.post()`
(same auth, error types and transport as `chat.completions.create`), and the response is read as
JSON rather than through the SDK's typed models. Both the SDK's recursive parameter transform and
its typed-response construction cost about 1 ms of CPU per request each (measured); at 64 requests
in flight they were most of a worker's CPU. The envelope is checked here instead; the model's
answer inside it is validated by `inference.schemas` like every provider's.
"""
from __future__ import annotations

import base64
import time

import httpx2
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
    error_body,
    fatal_status,
    item_specific,
    parse_retry_after,
    retryable_status,
    shared_client,
)

openai = lazy_module("openai")  # imported on first use: seconds at start-up otherwise


@shared_client
def _client(api_key: str, base_url: str, timeout: float) -> openai.OpenAI:
    return openai.OpenAI(api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0)


class OpenAICompatibleProvider(Provider):
    """Shared by the OpenAI and vLLM providers; subclasses say where the server is and how to sample."""

    def credentials(self) -> tuple[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def prepare_image(self, image: bytes, mime: str) -> tuple[bytes, str]:
        return image, mime

    def client(self) -> openai.OpenAI:
        api_key, base_url = self.credentials()
        return _client(api_key, base_url, settings.CPRT_PROVIDER_TIMEOUT_S)

    def chat_body(self, request: ModelRequest) -> dict:
        """The Chat Completions request body (also one line of a batch file)."""
        content: list[dict] = [{"type": "text", "text": request.user}]
        for image, mime in request.images:  # in the kind's order, after the text
            data, mime = self.prepare_image(image, mime or "image/jpeg")
            url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": content}]
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.schema, "strict": True},
        }
        return {"model": self.model_name, "messages": messages, "response_format": response_format, **self.request_params()}

    def generate(self, request: ModelRequest) -> ProviderReply:
        body = self.chat_body(request)
        started = time.monotonic()
        try:
            response = self.client().post("/chat/completions", body=body, cast_to=httpx2.Response)
        except openai.APITimeoutError as exc:
            raise RetryableError(f"timed out after {settings.CPRT_PROVIDER_TIMEOUT_S:g}s", {"error": str(exc)}) from None
        except openai.APIConnectionError as exc:
            raise RetryableError(f"connection error: {exc}", {"error": str(exc)}) from None
        except openai.APIStatusError as exc:
            raise _status_error(exc) from None
        latency_ms = int((time.monotonic() - started) * 1000)
        return parse_completion(response, latency_ms)


def parse_completion(response, latency_ms: int = 0) -> ProviderReply:
    """A Chat Completions response body -> ProviderReply. A 2xx that is not the API's answer (not
    JSON, as a proxy's HTML page; JSON without `choices`) is final for the run: every request
    would get the same (`NotTheAPI`)."""
    kind = response.headers.get("content-type", "").split(";", 1)[0].strip() or "no content type"
    try:
        raw = response.json()
    except ValueError:
        raise NotTheAPI(f"HTTP {response.status_code} but the body is not the API's JSON ({kind}): "
                        f"{response.text[:120]!r}", {"text": response.text[:4000]}, response.status_code) from None
    if not isinstance(raw, dict) or "choices" not in raw:
        raise NotTheAPI(f"HTTP {response.status_code} but the body is not a Chat Completions answer (no `choices`)",
                        {"body": raw}, response.status_code)
    return reply_from_body(raw, latency_ms)


def reply_from_body(raw: dict, latency_ms: int = 0) -> ProviderReply:
    """A Chat Completions body (online, or a batch output line's `response.body`) -> ProviderReply."""
    usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else {}
    tokens_in = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else 0
    tokens_out = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else 0
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ProviderReply(text=None, raw=raw, tokens_in=tokens_in, tokens_out=tokens_out, latency_ms=latency_ms,
                             parse_error="the response has no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = message.get("content")
    refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else ""
    finish_reason = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else ""
    if not refusal and finish_reason == "content_filter":
        refusal = "content_filter"
    return ProviderReply(
        text=content if isinstance(content, str) else None,
        raw=raw,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        refusal=refusal,
        finish_reason=finish_reason,
        latency_ms=latency_ms,
    )


def _status_error(exc: openai.APIStatusError):
    status = exc.status_code
    raw = {"status": status, "body": error_body(exc.response)}
    message = f"HTTP {status}: {getattr(exc, 'message', '') or exc}"
    if retryable_status(status):
        headers = exc.response.headers
        retry_after = None
        if headers.get("retry-after-ms"):
            try:
                retry_after = float(headers["retry-after-ms"]) / 1000
            except ValueError:
                retry_after = None
        retry_after = retry_after if retry_after is not None else parse_retry_after(headers.get("retry-after"))
        return RetryableError(message, raw, status, retry_after)
    if fatal_status(status):
        return FatalProviderError(message, raw, status)
    return PermanentError(message, raw, status, item_specific=item_specific(message, raw["body"]))


class OpenAIProvider(OpenAICompatibleProvider):
    name = "openai"
    default_base_url = "https://api.openai.com/v1"

    @classmethod
    def base_url(cls) -> str:
        return settings.OPENAI_BASE_URL
    label = "OpenAI"
    default_model = "gpt-5.1"
    queue = "api"

    @classmethod
    def availability(cls) -> Availability:
        base_url = settings.OPENAI_BASE_URL
        shown = {"base_url": base_url or "https://api.openai.com/v1 (default)", "max_rpm": settings.OPENAI_MAX_RPM}
        if not settings.OPENAI_API_KEY:
            return Availability(False, "OPENAI_API_KEY is not set in the environment.", shown)
        return Availability(True, "", shown)

    def credentials(self) -> tuple[str, str]:
        if not settings.OPENAI_API_KEY:
            raise ProviderUnavailable("OPENAI_API_KEY is not set in the worker's environment.")
        return settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL
