"""The Files and Batches endpoints of the fake OpenAI server (mixed into FakeOpenAIServer).

POST /v1/files (multipart, purpose=batch), GET /v1/files/{id}/content, POST /v1/batches,
GET /v1/batches/{id}, POST /v1/batches/{id}/cancel. A batch goes validating -> in_progress ->
completed after `batch_polls` retrieves; its lines are answered by the server's default model
(the same answers as online). Tests script individual requests by custom_id in `batch_outcomes`
("fail": a 500 in the error file, "expire": a batch_expired line in the error file, an HTTP status
such as "404": that status in the error file; `batch_outcome` scripts every request at once), can
make the whole batch end `expired` (`expire_batches`) or `failed` with a message (`fail_batches`, as
a batch whose input the provider refused), can rewrite the output file (`mangle_output`), and can
answer every Files and Batches request with one reply (`batch_answer`: a 401, a proxy's HTML page).
"""
from __future__ import annotations

import email.parser
import email.policy
import json
import re
import time
from typing import Callable

from .server import Reply

_BATCH = re.compile(r"^/v1/batches/([\w-]+)(/cancel)?$")
_FILE = re.compile(r"^/v1/files/([\w-]+)/content$")


def parse_multipart(headers, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """name -> (filename, bytes) of a multipart/form-data body."""
    head = f"Content-Type: {headers.get('Content-Type')}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    fields = {}
    for part in message.iter_parts():
        fields[part.get_param("name", header="content-disposition")] = (part.get_filename(), part.get_payload(decode=True))
    return fields


class OpenAIBatchesMixin:
    batch_polls = 2  # retrieves before a batch completes

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict] = {}
        self.batch_outcomes: dict[str, str] = {}
        self.batch_outcome: str | None = None  # every request's outcome, where batch_outcomes says nothing
        self.batch_answer: Reply | None = None
        self.expire_batches = False
        self.fail_batches: str | None = None
        self.cancel_keeps = 0.5  # share of a cancelled batch's lines that completed before the cancel
        self.mangle_output: Callable[[bytes], bytes] | None = None
        self.batch_calls: list[tuple[str, str]] = []

    def _batch_state(self):
        return self._batches

    def route(self, method: str, path: str, headers, raw: bytes) -> Reply | None:
        path = path.split("?", 1)[0]
        batches = self._batch_state()
        with self._lock:
            self.batch_calls.append((method, path))
        if self.batch_answer is not None and (path.startswith("/v1/files") or path.startswith("/v1/batches")):
            return self.batch_answer
        if method == "POST" and path == "/v1/files":
            fields = parse_multipart(headers, raw)
            file_id = f"file-{len(self._files) + 1}-{time.time_ns() % 10**6}"
            self._files[file_id] = fields["file"][1]
            return Reply(body={"id": file_id, "object": "file", "bytes": len(fields["file"][1]), "created_at": int(time.time()),
                               "filename": fields["file"][0] or "batch.jsonl", "purpose": fields["purpose"][1].decode(), "status": "processed"})
        match = _FILE.match(path)
        if method == "GET" and match:
            if match.group(1) not in self._files:
                return Reply(status=404, body={"error": {"message": "no such file", "type": "invalid_request_error"}})
            return Reply(body=self._files[match.group(1)], headers={"Content-Type": "application/octet-stream"})
        if method == "POST" and path == "/v1/batches":
            body = json.loads(raw or b"{}")
            if body.get("input_file_id") not in self._files:
                return Reply(status=400, body={"error": {"message": "unknown input_file_id", "type": "invalid_request_error"}})
            batch_id = f"batch_{len(batches) + 1}_{time.time_ns() % 10**6}"
            now = int(time.time())
            batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None, "input_file_id": body["input_file_id"],
                "completion_window": body["completion_window"], "status": "validating", "output_file_id": None, "error_file_id": None,
                "created_at": now, "expires_at": now + 86400, "metadata": body.get("metadata"), "_polls": 0,
                "request_counts": {"total": len(self._lines(body["input_file_id"])), "completed": 0, "failed": 0},
            }
            return Reply(body=self._public(batches[batch_id]))
        match = _BATCH.match(path)
        if match and match.group(1) in batches:
            batch = batches[match.group(1)]
            if method == "POST" and match.group(2):
                if batch["status"] in ("validating", "in_progress", "finalizing"):
                    batch["status"] = "cancelling"
                return Reply(body=self._public(batch))
            if method == "GET" and not match.group(2):
                self._advance(batch)
                return Reply(body=self._public(batch))
        if match:
            return Reply(status=404, body={"error": {"message": "no such batch", "type": "invalid_request_error"}})
        return None

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _lines(self, file_id: str) -> list[dict]:
        return [json.loads(line) for line in self._files[file_id].splitlines() if line.strip()]

    def _advance(self, batch: dict) -> None:
        batch["_polls"] += 1
        if batch["status"] == "validating" and self.fail_batches:
            batch["status"], batch["errors"] = "failed", {"object": "list",
                                                          "data": [{"code": "invalid_request", "message": self.fail_batches, "line": 1}]}
            batch["failed_at"] = int(time.time())
        elif batch["status"] == "validating":
            batch["status"] = "in_progress"
        elif batch["status"] == "cancelling":
            self._finish(batch, "cancelled", keep=self.cancel_keeps)
        elif batch["status"] == "in_progress" and batch["_polls"] >= self.batch_polls:
            self._finish(batch, "expired" if self.expire_batches else "completed", keep=0.5 if self.expire_batches else 1.0)

    def _finish(self, batch: dict, status: str, keep: float) -> None:
        lines = self._lines(batch["input_file_id"])
        done_upto = int(len(lines) * keep)
        output, errors = [], []
        for index, line in enumerate(lines):
            cid = line["custom_id"]
            scripted = self.batch_outcomes.get(cid, self.batch_outcome)
            if index >= done_upto:
                if status == "expired":
                    errors.append({"id": f"batch_req_{index}", "custom_id": cid, "response": None,
                                   "error": {"code": "batch_expired",
                                             "message": "This request could not be executed before the completion window expired."}})
                continue  # cancelled: never ran, no line at all
            if scripted == "fail":
                errors.append({"id": f"batch_req_{index}", "custom_id": cid, "error": None,
                               "response": {"status_code": 500, "request_id": f"req_{index}",
                                            "body": {"error": {"message": "fake server error", "type": "server_error"}}}})
            elif scripted and scripted.isdigit():
                status_code = int(scripted)
                code = {401: "invalid_api_key", 404: "model_not_found"}.get(status_code, "invalid_request_error")
                errors.append({"id": f"batch_req_{index}", "custom_id": cid, "error": None,
                               "response": {"status_code": status_code, "request_id": f"req_{index}",
                                            "body": {"error": {"message": f"fake {status_code}", "type": "invalid_request_error", "code": code}}}})
            elif scripted == "expire":
                errors.append({"id": f"batch_req_{index}", "custom_id": cid, "response": None,
                               "error": {"code": "batch_expired",
                                         "message": "This request could not be executed before the completion window expired."}})
            else:
                reply = self.default_reply(line["url"], line["body"])
                output.append({"id": f"batch_req_{index}", "custom_id": cid, "error": None,
                               "response": {"status_code": 200, "request_id": f"req_{index}", "body": reply.body}})
        data = "".join(json.dumps(o) + "\n" for o in output).encode()
        if self.mangle_output is not None:
            data = self.mangle_output(data)
        if output:
            batch["output_file_id"] = f"file-out-{batch['id']}"
            self._files[batch["output_file_id"]] = data
        if errors:
            batch["error_file_id"] = f"file-err-{batch['id']}"
            self._files[batch["error_file_id"]] = "".join(json.dumps(e) + "\n" for e in errors).encode()
        batch["status"] = status
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}
        batch[f"{status}_at"] = int(time.time())
