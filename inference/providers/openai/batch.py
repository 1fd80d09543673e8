"""OpenAI Batch API through the official SDK: upload a JSONL file (purpose "batch"), create the
batch on /v1/chat/completions with the 24 h window, poll, cancel, read the output and error files.

Also used for vLLM or any OpenAI-compatible base URL, and for ingesting the output of vLLM's
offline `vllm run-batch`, which writes the same line format.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator

from core.lazy import lazy_module

from ..base import FatalProviderError, ModelRequest, NotTheAPI, ProviderError
from ..batch_types import BatchStatus, ResultLine, iter_jsonl
from .provider import OpenAICompatibleProvider, _status_error, reply_from_body

openai = lazy_module("openai")

TERMINAL = {"completed", "failed", "expired", "cancelled"}
ENDPOINT = "/v1/chat/completions"


def line(provider: OpenAICompatibleProvider, custom_id: str, request: ModelRequest) -> dict:
    return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": provider.chat_body(request)}


class OpenAIBatchClient:
    def __init__(self, provider: OpenAICompatibleProvider):
        self.provider = provider

    def line(self, custom_id: str, request: ModelRequest) -> dict:
        return line(self.provider, custom_id, request)

    def _client(self):
        return self.provider.client()

    def submit(self, path: str, count: int, metadata: dict) -> tuple[str, str, BatchStatus]:
        """(provider batch id, input file id, status) of a new batch made of the file at `path`.
        Answers every later submission would get too raise `FatalProviderError` (401/403, 404, a 2xx
        that is not the API's JSON): the run pauses (docs/background-jobs.md)."""
        try:
            with open(path, "rb") as fh:
                uploaded = _api_object(self._client().files.create(file=fh, purpose="batch"), "the file upload")
            batch = _api_object(self._client().batches.create(
                input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h", metadata=metadata,
            ), "the batch creation")
        except openai.APIStatusError as exc:
            error = _status_error(exc)
            if isinstance(error, FatalProviderError):
                raise FatalProviderError(f"batch submission refused: {error}", error.raw, error.status) from None
            raise ProviderError(f"batch submission refused: {exc}") from None
        except openai.APIError as exc:
            raise ProviderError(f"batch submission refused: {exc}") from None
        return batch.id, uploaded.id, _status(batch)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self._client().batches.retrieve(batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        return _status(self._client().batches.cancel(batch_id))

    def results(self, status: BatchStatus) -> Iterator[ResultLine]:
        for ref, source in ((status.output_ref, "output"), (status.error_ref, "error")):
            if not ref:
                continue
            with self._client().files.with_streaming_response.content(ref) as response:
                yield from parse_lines(response.iter_lines(), source)


def _api_object(value, what: str):
    """The SDK returns the body as text when a 2xx is not JSON (a proxy's HTML page), and an object
    without its id when the JSON is not the API's: every submission would get the same."""
    if isinstance(getattr(value, "id", None), str):
        return value
    text = value if isinstance(value, str) else repr(value)
    raise NotTheAPI(f"{what} answered 2xx but not with the API's JSON: {text[:120]!r}", {"text": text[:4000]})


def _status(batch) -> BatchStatus:
    counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
    expires = datetime.fromtimestamp(batch.expires_at, tz=timezone.utc) if batch.expires_at else None
    message = "; ".join(e.message or e.code or "" for e in (batch.errors.data or [])) if batch.errors else ""
    return BatchStatus(
        state=batch.status, terminal=batch.status in TERMINAL, counts=counts, output_ref=batch.output_file_id or "",
        error_ref=batch.error_file_id or "", expires_at=expires, message=message,
    )


def parse_lines(lines, source: str = "output") -> Iterator[ResultLine]:
    """Batch output or error lines (OpenAI's format, and vLLM run_batch's) -> ResultLine."""
    for number, value, problem in iter_jsonl(lines):
        if problem:
            yield ResultLine(number, problem=problem, source=source)
            continue
        if not isinstance(value, dict) or "custom_id" not in value:
            yield ResultLine(number, problem="not a batch result line (no custom_id)", source=source)
            continue
        cid, response, error = value.get("custom_id"), value.get("response"), value.get("error")
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if error or status != 200:
            err = error if isinstance(error, dict) else {}
            if not err and isinstance(body, dict) and isinstance(body.get("error"), dict):
                err = body["error"]
            yield ResultLine(number, cid, failure={"code": str(err.get("code") or ""), "message": str(err.get("message") or error or ""),
                                                   "status": status}, source=source)
            continue
        if not isinstance(body, dict):
            yield ResultLine(number, cid, problem="response.body is not a JSON object", source=source)
            continue
        yield ResultLine(number, cid, reply=reply_from_body(body), source=source)
