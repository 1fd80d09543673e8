"""A fake Gemini API server: POST /v1beta/models/{model}:generateContent (the REST wire format), plus
the batch, upload and download endpoints (`gemini_batches`)."""
from __future__ import annotations

import base64
import json
import time

from .gemini_batches import GeminiBatchesMixin
from .server import FakeServer, Reply, model_answer, schema_kind


def response(text: str | None, finish_reason: str = "STOP", block_reason: str | None = None, model: str = "fake-gemini",
             prompt_tokens: int = 1100, output_tokens: int = 70) -> dict:
    body: dict = {
        "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens, "totalTokenCount": prompt_tokens + output_tokens},
        "modelVersion": model,
        # The stand-in's mark: a run that gets a reply carrying it shows the "stand-in" badge (inference.results).
        "responseId": f"cprt-stand-in-{time.time_ns()}",
    }
    if block_reason:
        body["promptFeedback"] = {"blockReason": block_reason}
        return body
    candidate = {"finishReason": finish_reason, "index": 0}
    if text is not None:
        candidate["content"] = {"role": "model", "parts": [{"text": text}]}
    body["candidates"] = [candidate]
    return body


def ok(content, **kw) -> Reply:
    return Reply(body=response(json.dumps(content) if isinstance(content, dict) else content, **kw))


def blocked(reason: str = "SAFETY") -> Reply:
    return Reply(body=response(None, block_reason=reason))


def finish_blocked(reason: str = "SAFETY") -> Reply:
    return Reply(body=response(None, finish_reason=reason))


def error(status: int, message: str = "fake error", headers: dict | None = None, retry_delay: str | None = None) -> Reply:
    names = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED"}
    status_name = names.get(status, "UNKNOWN")
    err: dict = {"code": status, "message": message, "status": status_name}
    if retry_delay:
        err["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}]
    return Reply(status=status, body={"error": err}, headers=headers or {})


def decode_base64(data: str) -> bytes:
    """The SDK may send standard or URL-safe base64, with or without padding; the API takes both."""
    data = data.replace("-", "+").replace("_", "/")
    return base64.b64decode(data + "=" * (-len(data) % 4))


def request_images(payload: dict) -> list[bytes]:
    """Every inline image of a generateContent request (or a batch request), in the order sent."""
    images = []
    for content in payload.get("contents", []):
        for part in content.get("parts", []):
            inline = part.get("inlineData") or part.get("inline_data")
            if inline:
                images.append(decode_base64(inline["data"]))
    return images


def request_parts(payload: dict) -> tuple[str, bytes | None, dict]:
    text, image = "", None
    for content in payload.get("contents", []):
        for part in content.get("parts", []):
            if "text" in part:
                text += part["text"]
            inline = part.get("inlineData") or part.get("inline_data")
            if inline:
                image = decode_base64(inline["data"])
    config = payload.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("response_json_schema") or {}
    return text, image, schema


class FakeGeminiServer(GeminiBatchesMixin, FakeServer):
    def matches(self, path: str) -> bool:
        return path.endswith(":generateContent")

    def default_reply(self, path: str, payload: dict) -> Reply:
        text, image, schema = request_parts(payload)
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        return ok(model_answer(schema_kind(schema), schema, image, text, request_images(payload)), model=model)
