"""A fake Hugging Face Hub on 127.0.0.1: the few endpoints `HfApi.create_repo` and `HfApi.upload_folder` use.

Point the real SDK at it with `HfApi(endpoint=hub.url)` (the app: settings.HF_ENDPOINT). Endpoints
(huggingface_hub's hf_api.py and _commit_api.py):

* POST /api/repos/create            {"name", "organization", "type", "visibility"} -> {"url"}; 409 when it exists
* POST /api/validate-yaml           the dataset card's metadata -> no errors, no warnings
* POST /api/{type}s/{owner}/{name}/preupload/{revision}
                                    -> every file `uploadMode: "regular"`, so no LFS or Xet transfer is
                                       ever started: the contents travel inside the commit
* POST /api/{type}s/{owner}/{name}/commit/{revision}
                                    NDJSON: a header line, then one `file` line per file with its
                                    base64 content -> {"commitUrl", "commitOid"}

Every request must carry `Authorization: Bearer <token>` (401 otherwise). Repositories, their
visibility, their files (path -> bytes) and every request's headers are kept for the test to read.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.fakes.server import FakeServer, LocalHTTPServer, Reply

REPO_PATH = re.compile(r"^/api/(?P<type>models|datasets|spaces)/(?P<owner>[^/]+)/(?P<name>[^/]+)/(?P<op>preupload|commit)/(?P<rev>[^/]+)$")


@dataclass
class FakeRepo:
    repo_type: str
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[dict] = field(default_factory=list)  # the header line of every commit


class FakeHubServer(LocalHTTPServer):
    def __init__(self, token: str):
        self.token = token
        self.repos: dict[str, FakeRepo] = {}  # "owner/name" -> repo
        self.requests: list[dict] = []  # {"method", "path", "headers"}
        self._lock = threading.Lock()

    def start(self) -> "FakeHubServer":
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                FakeServer._send(self, hub.answer("POST", self.path.split("?", 1)[0], dict(self.headers), body))

            def do_GET(self):
                FakeServer._send(self, hub.answer("GET", self.path.split("?", 1)[0], dict(self.headers), b""))

        return self.serve(Handler)

    # --- the protocol ----------------------------------------------------------------------------
    def answer(self, method: str, path: str, headers: dict, body: bytes) -> Reply:
        headers = {k.lower(): v for k, v in headers.items()}
        with self._lock:
            self.requests.append({"method": method, "path": path, "headers": headers})
        if headers.get("authorization") != f"Bearer {self.token}":
            return Reply(status=401, body={"error": "Invalid credentials in Authorization header"})
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body or b"{}"))
        if method == "POST" and path == "/api/validate-yaml":
            return Reply(body={"errors": [], "warnings": []})
        match = REPO_PATH.match(path)
        if method == "POST" and match:
            repo_id = f"{match['owner']}/{match['name']}"
            repo = self.repos.get(repo_id)
            if repo is None or f"{repo.repo_type}s" != match["type"]:
                return Reply(status=404, body={"error": f"Repository not found: {repo_id}"}, headers={"X-Error-Code": "RepoNotFound"})
            if match["op"] == "preupload":
                files = json.loads(body)["files"]
                return Reply(body={"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None} for f in files]})
            return self._commit(repo_id, repo, match["type"], body)
        return Reply(status=404, body={"error": f"no route {method} {path}"})

    def _create_repo(self, payload: dict) -> Reply:
        repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else f"user/{payload['name']}"
        repo_type = payload.get("type") or "model"
        url = f"{self.url}/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}"
        with self._lock:
            if repo_id in self.repos:
                return Reply(status=409, body={"error": "You already created this repo", "url": url})
            # The Hub's default without a visibility is public; the SDK sends one when `private` is given.
            self.repos[repo_id] = FakeRepo(repo_type=repo_type, private=payload.get("visibility") == "private")
        return Reply(body={"url": url, "name": repo_id, "id": hashlib.sha1(repo_id.encode()).hexdigest()[:24]})

    def _commit(self, repo_id: str, repo: FakeRepo, type_path: str, body: bytes) -> Reply:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            return Reply(status=400, body={"error": "The commit must start with a header line"})
        files = {}
        for line in lines[1:]:
            value = line["value"]
            if line["key"] != "file" or value.get("encoding") != "base64":
                return Reply(status=400, body={"error": f"The fake Hub takes only base64 file lines, got {line['key']}"})
            files[value["path"]] = base64.b64decode(value["content"])
        with self._lock:
            repo.files.update(files)
            repo.commits.append(lines[0]["value"])
            oid = hashlib.sha1(json.dumps([repo_id, len(repo.commits)]).encode()).hexdigest()
        return Reply(body={"success": True, "commitOid": oid, "commitUrl": f"{self.url}/{type_path}/{repo_id}/commit/{oid}"})
