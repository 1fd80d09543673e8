"""The batch endpoints of the fake Gemini server (mixed into FakeGeminiServer), REST wire format.

POST /v1beta/models/{model}:batchGenerateContent (inline requests or an uploaded file name),
GET /v1beta/batches/{id}, POST /v1beta/batches/{id}:cancel, the resumable upload
(POST /upload/v1beta/files, then the upload URL) and GET /v1beta/files/{id}:download?alt=media.
A batch is PENDING, then RUNNING, then SUCCEEDED after `batch_polls` gets; requests listed in
`batch_outcomes` get an error ("fail") or, in an output file, a status object ("status") instead
of a response. `batch_answer` answers every batch and file request with one reply (a 401, a proxy's
HTML page).
"""
from __future__ import annotations

import json
import re
import time

from .server import Reply

_CREATE = re.compile(r"^/v1\w*/models/([^/:]+):batchGenerateContent$")
_BATCH = re.compile(r"^/v1\w*/batches/([\w-]+)(:cancel)?$")
_DOWNLOAD = re.compile(r"^/v1\w*/files/([\w-]+):download$")
_UPLOAD = re.compile(r"^/upload/v1\w*/files(?:/session-([\w-]+))?$")


class GeminiBatchesMixin:
    batch_polls = 2

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._gfiles: dict[str, bytes] = {}
        self._gbatches: dict[str, dict] = {}
        self.batch_outcomes: dict[str, str] = {}
        self.batch_calls: list[tuple[str, str]] = []
        self.batch_answer: Reply | None = None

    def route(self, method: str, path: str, headers, raw: bytes) -> Reply | None:
        path = path.split("?", 1)[0]
        with self._lock:
            self.batch_calls.append((method, path))
        if self.batch_answer is not None and any(p.match(path) for p in (_CREATE, _BATCH, _DOWNLOAD, _UPLOAD)):
            return self.batch_answer
        upload = _UPLOAD.match(path)
        if method == "POST" and upload:
            if upload.group(1) is None:  # start of a resumable upload
                session = f"s{len(self._gfiles) + 1}x{time.time_ns() % 10**6}"
                self._gfiles[session] = b""
                return Reply(body={}, headers={"x-goog-upload-url": f"{self.url}/upload/v1beta/files/session-{session}",
                                               "x-goog-upload-status": "active"})
            session = upload.group(1)
            self._gfiles[session] += raw
            if "finalize" not in (headers.get("X-Goog-Upload-Command") or ""):
                return Reply(body={}, headers={"x-goog-upload-status": "active"})
            name = f"files/{session}"
            return Reply(body={"file": {"name": name, "mimeType": "application/jsonl", "sizeBytes": str(len(self._gfiles[session])),
                                        "state": "ACTIVE", "uri": f"{self.url}/v1beta/{name}"}}, headers={"x-goog-upload-status": "final"})
        match = _DOWNLOAD.match(path)
        if method == "GET" and match:
            data = self._gfiles.get(match.group(1))
            if data is None:
                return Reply(404, {"error": {"code": 404, "message": "no such file", "status": "NOT_FOUND"}})
            return Reply(body=data, headers={"Content-Type": "application/octet-stream"})
        match = _CREATE.match(path)
        if method == "POST" and match:
            return self._create(match.group(1), json.loads(raw or b"{}"))
        match = _BATCH.match(path)
        if match:
            batch = self._gbatches.get(match.group(1))
            if batch is None:
                return Reply(404, {"error": {"code": 404, "message": "no such batch", "status": "NOT_FOUND"}})
            if method == "POST" and match.group(2):
                if batch["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                    batch["state"] = "BATCH_STATE_CANCELLED"
                return Reply(body={})
            if method == "GET":
                self._advance(batch)
                return Reply(body=self._operation(batch))
        return None

    def _create(self, model: str, body: dict) -> Reply:
        config = body.get("batch", {}).get("inputConfig", {})
        if "fileName" in config:
            data = self._gfiles.get(config["fileName"].split("/", 1)[1], b"")
            items = [json.loads(line) for line in data.splitlines() if line.strip()]
            requests, source = [(item["key"], item["request"]) for item in items], "file"
        else:
            items = config.get("requests", {}).get("requests", [])
            requests, source = [((item.get("metadata") or {}).get("key"), item["request"]) for item in items], "inline"
        batch_id = f"b{len(self._gbatches) + 1}x{time.time_ns() % 10**6}"
        self._gbatches[batch_id] = {"id": batch_id, "model": model, "requests": requests, "source": source,
                                    "state": "BATCH_STATE_PENDING", "polls": 0, "output": None}
        return Reply(body=self._operation(self._gbatches[batch_id]))

    def _advance(self, batch: dict) -> None:
        batch["polls"] += 1
        if batch["state"] == "BATCH_STATE_PENDING":
            batch["state"] = "BATCH_STATE_RUNNING"
        elif batch["state"] == "BATCH_STATE_RUNNING" and batch["polls"] >= self.batch_polls:
            answered = []
            for key, request in batch["requests"]:
                if self.batch_outcomes.get(key) == "fail":
                    answered.append({"key": key, "error": {"code": 500, "message": "fake internal error"}})
                elif self.batch_outcomes.get(key) == "status" and batch["source"] == "file":
                    # A google.rpc.Status object in place of the response (output files only).
                    answered.append({"key": key, "status": {"code": 8, "message": "Resource has been exhausted", "details": []}})
                else:
                    answered.append({"key": key, "response": self.default_reply(f"/v1beta/models/{batch['model']}:generateContent", request).body})
            if batch["source"] == "file":
                self._gfiles[f"out-{batch['id']}"] = "".join(json.dumps(a) + "\n" for a in answered).encode()
                batch["output"] = {"responsesFile": f"files/out-{batch['id']}"}
            else:
                batch["output"] = {"inlinedResponses": {"inlinedResponses": [
                    {"metadata": {"key": a["key"]}, **({"error": a["error"]} if "error" in a else {"response": a["response"]})} for a in answered]}}
            batch["state"] = "BATCH_STATE_SUCCEEDED"

    @staticmethod
    def _operation(batch: dict) -> dict:
        metadata = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
                    "model": f"models/{batch['model']}", "displayName": batch["id"], "state": batch["state"],
                    "createTime": "2026-01-01T00:00:00Z", "name": f"batches/{batch['id']}"}
        if batch["output"] is not None:
            metadata["output"] = batch["output"]
        return {"name": f"batches/{batch['id']}", "metadata": metadata, "done": batch["output"] is not None}
