"""Gemini batch mode through google-genai's `client.batches`: inline requests for small batches,
an uploaded JSONL file (`client.files.upload`) for large ones; states are JOB_STATE_*.

A request line is the REST GenerateContentRequest (`{"key": custom_id, "request": {...}}`), the
format of Gemini's batch input files; inline batches carry the same request with the custom_id in
`metadata.key`. Responses go through the online parser (`reply_from_response`).
"""
from __future__ import annotations

import base64
import json
from typing import Iterator

from core.lazy import lazy_module

from ..base import FatalProviderError, ModelRequest, NotTheAPI, ProviderError
from ..batch_types import BatchStatus, ResultLine, iter_jsonl
from .provider import GeminiProvider, _api_error, reply_from_response

genai_errors = lazy_module("google.genai.errors")
types = lazy_module("google.genai.types")

TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED", "JOB_STATE_PARTIALLY_SUCCEEDED"}


def rest_request(provider: GeminiProvider, request: ModelRequest) -> dict:
    parts = [{"inlineData": {"mimeType": mime or "image/jpeg", "data": base64.b64encode(image).decode("ascii")}}
             for image, mime in request.images]
    parts.append({"text": request.user})
    config = {"responseMimeType": "application/json", "responseJsonSchema": request.schema, **provider.request_params()}
    return {
        "contents": [{"role": "user", "parts": parts}],
        "systemInstruction": {"parts": [{"text": request.system}]},
        "generationConfig": config,
    }


def inline_request(model: str, line: dict) -> types.InlinedRequest:
    req = line["request"]
    return types.InlinedRequest(
        model=model,
        contents=[types.Content.model_validate(c) for c in req["contents"]],
        config=types.GenerateContentConfig(
            system_instruction=types.Content.model_validate(req["systemInstruction"]),
            response_mime_type=req["generationConfig"]["responseMimeType"],
            response_json_schema=req["generationConfig"]["responseJsonSchema"],
        ),
        metadata={"key": line["key"]},
    )


def _state(job) -> str:
    return getattr(job.state, "value", None) or str(job.state or "")


class GeminiBatchClient:
    def __init__(self, provider: GeminiProvider, inline_max_bytes: int):
        self.provider = provider
        self.inline_max_bytes = inline_max_bytes

    def line(self, custom_id: str, request: ModelRequest) -> dict:
        return {"key": custom_id, "request": rest_request(self.provider, request)}

    def submit(self, path: str, count: int, metadata: dict) -> tuple[str, str, BatchStatus]:
        import os

        client = self.provider.client()
        name = f"cprt-{metadata.get('cprt_batch', '')}"
        inline = os.path.getsize(path) <= self.inline_max_bytes
        if inline:
            with open(path, encoding="utf-8") as fh:
                src, file_name = [inline_request(self.provider.model_name, json.loads(text)) for text in fh if text.strip()], ""
        try:
            if not inline:
                uploaded = client.files.upload(file=path, config=types.UploadFileConfig(display_name=name, mime_type="jsonl"))
                src, file_name = uploaded.name, uploaded.name
            job = client.batches.create(model=self.provider.model_name, src=src, config=types.CreateBatchJobConfig(display_name=name))
        except genai_errors.APIError as exc:
            error = _api_error(exc)
            if isinstance(error, FatalProviderError):  # 401/403, 404: every submission would get the same; the run pauses
                raise FatalProviderError(f"batch submission refused: {error}", error.raw, error.status) from None
            raise ProviderError(f"batch submission refused: {exc}") from None
        except ValueError as exc:  # the SDK could not read a 2xx body as JSON (a proxy's HTML page)
            raise NotTheAPI(f"batch submission: the answer is not the API's JSON: {exc}", {"error": str(exc)}) from None
        if not isinstance(getattr(job, "name", None), str):
            raise NotTheAPI("batch submission: the answer is not a batch job (no name)", {"body": repr(job)[:4000]})
        return job.name, file_name, _status(job)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self.provider.client().batches.get(name=batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        self.provider.client().batches.cancel(name=batch_id)
        return self.retrieve(batch_id)

    def results(self, status: BatchStatus) -> Iterator[ResultLine]:
        if status.output_ref.startswith("batches/"):  # inline batch: the responses come with the job
            job = self.provider.client().batches.get(name=status.output_ref)
            yield from parse_inline((job.dest.inlined_responses or []) if job.dest else [])
        elif status.output_ref:
            data = self.provider.client().files.download(file=status.output_ref)
            yield from parse_lines(data.splitlines())


def _status(job) -> BatchStatus:
    state = _state(job)
    dest = job.dest
    if dest is not None and dest.file_name:
        output = dest.file_name
    elif dest is not None and dest.inlined_responses is not None:
        output = job.name  # the responses come with the job itself
    else:
        output = ""
    counts = {}
    if dest is not None and dest.inlined_responses is not None:
        counts = {"total": len(dest.inlined_responses), "failed": sum(1 for r in dest.inlined_responses if r.error is not None)}
        counts["completed"] = counts["total"] - counts["failed"]
    message = (job.error.message or "") if job.error is not None else ""
    return BatchStatus(state=state, terminal=state in TERMINAL, counts=counts, output_ref=output, message=message or "")


def _failure(error) -> dict:
    code = getattr(error, "code", None)
    return {"code": str(code or ""), "message": str(getattr(error, "message", "") or error), "status": code}


def parse_inline(responses) -> Iterator[ResultLine]:
    for number, item in enumerate(responses, start=1):
        key = (item.metadata or {}).get("key")
        if key is None:
            yield ResultLine(number, problem="inline response without metadata.key")
        elif item.error is not None:
            yield ResultLine(number, key, failure=_failure(item.error))
        elif item.response is None:
            yield ResultLine(number, key, problem="inline response with neither response nor error")
        else:
            yield ResultLine(number, key, reply=reply_from_response(item.response))


def parse_lines(lines) -> Iterator[ResultLine]:
    """A Gemini batch output file: {"key", "response"}, {"key", "error"} or {"key", "status"} per line."""
    for number, value, problem in iter_jsonl(lines):
        if problem:
            yield ResultLine(number, problem=problem)
        elif not isinstance(value, dict) or "key" not in value:
            yield ResultLine(number, problem="not a batch result line (no key)")
        elif isinstance(value.get("error"), dict):
            yield ResultLine(number, value["key"], failure={"code": str(value["error"].get("code", "")),
                                                             "message": str(value["error"].get("message", "")), "status": value["error"].get("code")})
        elif isinstance(value.get("status"), dict):
            # A google.rpc.Status object instead of a response ({"code": 8, "message": ...}): the request
            # failed at the provider; a failed request is retryable (the run's retry), not a refused line.
            status = value["status"]
            yield ResultLine(number, value["key"], failure={"code": f"status {status.get('code', '')}".strip(),
                                                             "message": str(status.get("message", "")), "status": None})
        elif isinstance(value.get("response"), dict):
            try:
                response = types.GenerateContentResponse.model_validate(value["response"])
            except Exception as exc:  # noqa: BLE001 - pydantic's message says what is wrong
                yield ResultLine(number, value["key"], problem=f"response is not a GenerateContentResponse: {str(exc)[:300]}")
                continue
            yield ResultLine(number, value["key"], reply=reply_from_response(response))
        else:
            yield ResultLine(number, value["key"], problem="line has neither response nor error")
