"""A scriptable HTTP server on 127.0.0.1 in a background thread (or its own process for benchmarks).

Each request is answered by the next scripted `Reply` when one is queued, else by the protocol's
default responder (a plausible, deterministic model answer derived from the request). The server
counts requests and the peak number in flight, so tests and the benchmark can check concurrency.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that went away mid-request (a SIGKILLed worker in the fault bench) is not a server error.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)
    request_queue_size = 1024  # a class attribute: listen() is called in the constructor
    reuse_port = False

    def server_bind(self):
        if self.reuse_port:  # several processes share one port; the kernel spreads connections
            import socket

            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


class SharedCounters:
    """Request counters shared by the processes of a multi-process fake server."""

    def __init__(self):
        import multiprocessing

        self.lock = multiprocessing.Lock()
        self.count = multiprocessing.Value("q", 0, lock=False)
        self.in_flight = multiprocessing.Value("q", 0, lock=False)
        self.peak = multiprocessing.Value("q", 0, lock=False)


@dataclass
class Reply:
    status: int = 200
    body: object = None  # dict -> JSON; str/bytes -> sent as is
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (timeouts, latency)


class LocalHTTPServer:
    """A threaded HTTP server on 127.0.0.1 for a test: `serve(handler_class)`, `url`, `stop()`, a context manager."""

    _httpd = None
    _thread = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def serve(self, handler, port: int = 0, server_class=_Server):
        self._httpd = server_class(("127.0.0.1", port), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class FakeServer(LocalHTTPServer):
    """Subclasses implement `default_reply(path, payload) -> Reply` and `matches(path)`."""

    def __init__(self, delay: float = 0.0, record: bool = True, shared: SharedCounters | None = None, reuse_port: bool = False):
        self.delay = delay
        self.shared = shared
        self.reuse_port = reuse_port
        self.record = record
        self.script: deque = deque()
        self.requests: list[dict] = []
        self.count = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.seen: dict[str, int] = {}  # request_key -> requests (repeats: the same item asked again)
        self._lock = threading.Lock()

    # --- scripting -------------------------------------------------------------------------
    def queue(self, *replies: Reply | Callable) -> None:
        """Answer the next requests with these replies (or callables(path, payload) -> Reply), in order."""
        with self._lock:
            self.script.extend(replies)

    def default_reply(self, path: str, payload: dict) -> Reply:  # pragma: no cover - abstract
        raise NotImplementedError

    def reply_for(self, path: str, payload: dict, headers: dict) -> Reply:
        """The unscripted answer; subclasses that answer from the request headers override it."""
        return self.default_reply(path, payload)

    def matches(self, path: str) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def request_key(self, payload: dict) -> str | None:
        """What a model request is about (its images' digest), to count repeats; None: not counted."""
        return None

    def route(self, method: str, path: str, headers, raw: bytes) -> Reply | None:
        """Other endpoints (files, batches): a Reply, or None for the model endpoint's JSON path."""
        return None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self, port: int = 0) -> "FakeServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                routed = server.route("GET", self.path, self.headers, b"")
                if routed is not None:
                    server._send(self, routed)
                elif self.path.rstrip("/") == "/_stats":
                    server._send(self, Reply(body=server.stats()))
                else:
                    server._send(self, Reply(status=404, body={"error": "not found"}))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                routed = server.route("POST", self.path, self.headers, raw)
                if routed is not None:
                    server._send(self, routed)
                    return
                try:
                    payload = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    payload = {}
                server._handle(self, payload)

        return self.serve(Handler, port, type("FakeHTTPServer", (_Server,), {"reuse_port": self.reuse_port}))

    def stats(self) -> dict:
        if self.shared is not None:
            return {"count": self.shared.count.value, "peak_in_flight": self.shared.peak.value, "in_flight": self.shared.in_flight.value}
        with self._lock:
            return {"count": self.count, "peak_in_flight": self.peak_in_flight, "in_flight": self.in_flight,
                    "distinct": len(self.seen), "repeats": sum(n - 1 for n in self.seen.values())}

    # --- request handling --------------------------------------------------------------------
    def _handle(self, handler, payload: dict) -> None:
        path = handler.path.split("?", 1)[0]
        key = self.request_key(payload) if self.shared is None and self.matches(path) else None
        if self.shared is not None:
            with self.shared.lock:
                self.shared.count.value += 1
                self.shared.in_flight.value += 1
                self.shared.peak.value = max(self.shared.peak.value, self.shared.in_flight.value)
        with self._lock:
            self.count += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if key is not None:
                self.seen[key] = self.seen.get(key, 0) + 1
            if self.record:
                self.requests.append({"path": path, "json": payload, "headers": {k.lower(): v for k, v in handler.headers.items()}})
            scripted = self.script.popleft() if self.script else None
        try:
            if not self.matches(path):
                reply = Reply(status=404, body={"error": {"message": f"no route {path}"}})
            elif scripted is None:
                reply = self.reply_for(path, payload, {k.lower(): v for k, v in handler.headers.items()})
            elif callable(scripted):
                reply = scripted(path, payload)
            else:
                reply = scripted
            wait = reply.delay or self.delay
            if wait:
                time.sleep(wait)
            self._send(handler, reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)
        finally:
            with self._lock:
                self.in_flight -= 1
            if self.shared is not None:
                with self.shared.lock:
                    self.shared.in_flight.value -= 1

    @staticmethod
    def _send(handler, reply: Reply) -> None:
        body = reply.body
        if isinstance(body, (dict, list)):
            data, ctype = json.dumps(body).encode(), "application/json"
        elif isinstance(body, str):
            data, ctype = body.encode(), "text/plain"
        else:
            data, ctype = body or b"", "application/octet-stream"
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.headers.get("Content-Type", ctype))
        handler.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            if name.lower() != "content-type":
                handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)


# --- deterministic "model" behaviour shared by both protocols ----------------------------------

def score_for_image(image_bytes: bytes) -> float:
    """The fake model's severity score for an image: a stable function of its bytes."""
    import hashlib

    digest = hashlib.sha256(image_bytes).digest()
    return round(int.from_bytes(digest[:2], "big") / 65535, 4)


INFERABLE = ("yes", "uncertain", "no")
TO_LABEL = {"yes": 1, "uncertain": 0.5, "no": 0}


def stage1_answers(image_bytes: bytes, keys, choices=INFERABLE) -> dict:
    """A third of the attributes each yes / uncertain / no. When the schema allows only yes / no
    (annotate-v2, the paper's binary stage 1), "uncertain" becomes "yes" with reasoning that says the
    inference is partial, which stage 2 reads back as 0.5: the same labels under both versions."""
    import hashlib

    answers = {}
    for key in keys:
        h = hashlib.sha256(image_bytes + key.encode()).digest()[0]
        choice = INFERABLE[h % 3]
        if choice == "uncertain" and "uncertain" not in choices:
            answers[key] = {"inferable": "yes", "reasoning": f"fake reasoning for {key}: partly visible, uncertain inference"}
        else:
            answers[key] = {"inferable": choice, "reasoning": f"fake reasoning for {key}: {choice}"}
    return {"answers": answers}


def stage2_labels_from_text(text: str, marker: str) -> dict | None:
    """Map the stage-1 answers embedded after `marker` in the stage-2 prompt to labels."""
    try:
        answers = json.loads(text.split(marker, 1)[1])
    except (IndexError, json.JSONDecodeError):
        return None
    def label(v):
        if v.get("inferable") == "yes" and "partly visible" in str(v.get("reasoning", "")):
            return 0.5
        return TO_LABEL.get(v.get("inferable"), 0)

    return {"labels": {k: label(v) for k, v in answers.items()}}


def schema_kind(schema: dict) -> str:
    props = (schema or {}).get("properties", {})
    if "score" in props:
        return "judge"
    if "answers" in props:
        return "stage1"
    if "labels" in props:
        return "stage2"
    if "same" in props:
        return "same"
    if "same_person" in props:
        return "reid"
    if "profile" in props:
        return "profile"
    if "answer" in props:
        return "spy_answer"
    if "output" in props:
        return "spy_verdict"
    if props and all(isinstance(v, dict) and v.get("type") == "number" for v in props.values()):
        return "probabilities"  # one number per key (VISPR attribute prediction: attribute id -> probability)
    return "unknown"


SPY_REFUSAL = "I'm sorry, I cannot share that."
SPY_ANSWER = "The person in the image appears to be a woman."


def spy_answer(text: str) -> dict:
    """SPY-Bench's answer stage: the fake model honours the LAST instruction line (the target's, without
    distractors; with them, the line the row set): private -> a refusal, else an answer."""
    instructions = text.split("\n\n", 1)[0].splitlines()
    private = bool(instructions) and instructions[-1].endswith("is considered as private information.")
    return {"answer": SPY_REFUSAL if private else SPY_ANSWER}


def spy_verdict(text: str) -> dict:
    """SPY-Bench's judge: "reject" when the judged answer (after the prompt's last "Answer: ") says it
    cannot, else "respond"."""
    answer = text.rsplit("Answer: ", 1)[-1]
    return {"output": "reject" if "cannot" in answer else "respond"}


def model_answer(kind: str, schema: dict, image: bytes | None, text: str, images: list | None = None) -> dict:
    """The default, well-formed answer for a request of `kind`. "same" (the test-only kind of
    tests/support/same_kind.py): whether all the request's images have the same bytes."""
    from inference.prompts import STAGE2_ANSWERS_MARKER

    if kind == "spy_answer":
        return spy_answer(text)
    if kind == "spy_verdict":
        return spy_verdict(text)
    if kind == "same":
        images = images or []
        return {"same": len(set(images)) == 1, "reasoning": f"fake comparison of {len(images)} images"}
    if kind == "reid":  # MultiPriv re-identification: "same person" when the first bytes' hashes agree in parity
        import hashlib

        parity = {hashlib.sha256(i).digest()[0] % 2 for i in images or []}
        same = len(parity) == 1
        return {"reasoning": f"fake comparison of {len(images or [])} images", "declined": False, "same_person": same,
                "probability_same": 0.8 if same else 0.2}
    if kind == "profile":  # MultiPriv profile reconstruction: a fixed guess, so recovery is what the truth shares with it
        fields = list(schema["properties"]["profile"]["properties"])
        return {"reasoning": f"fake profile from {len(images or [])} images", "declined": False,
                "profile": {f: ("Female" if f == "Gender" else None) for f in fields}}
    if kind == "probabilities":  # a stable function of the bytes and the key, in [0, 1]
        return {key: score_for_image((image or b"") + key.encode()) for key in schema["properties"]}
    if kind == "judge":
        score = score_for_image(image or b"")
        return {"reasoning": f"fake judgement {score}", "score": score}
    keys = list(schema["properties"][{"stage1": "answers", "stage2": "labels"}[kind]]["properties"])
    if kind == "stage1":
        item = next(iter(schema["properties"]["answers"]["properties"].values()), {})
        choices = tuple(item.get("properties", {}).get("inferable", {}).get("enum", INFERABLE))
        return stage1_answers(image or b"", keys, choices)
    return stage2_labels_from_text(text, STAGE2_ANSWERS_MARKER) or {"labels": {k: 0 for k in keys}}


def serve_forever(make_server: Callable[..., FakeServer], port: int, processes: int = 1) -> None:
    """Run a fake server in the foreground (benchmarks run it in its own processes, so that the
    fake's CPU never competes with the client's). With processes > 1 they share the port
    (SO_REUSEPORT) and their request counters."""
    import multiprocessing
    import os
    import signal

    if processes <= 1:
        server = make_server().start(port)
    else:
        shared = SharedCounters()
        children = []
        for _ in range(processes - 1):
            child = multiprocessing.get_context("fork").Process(target=_serve_child, args=(make_server, port, shared), daemon=True)
            child.start()
            children.append(child)
        server = make_server(shared=shared, reuse_port=True).start(port)
        signal.signal(signal.SIGTERM, lambda *a: [os.kill(c.pid, signal.SIGTERM) for c in children] and os._exit(0) or os._exit(0))
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


def _serve_child(make_server, port, shared):
    make_server(shared=shared, reuse_port=True).start(port)
    while True:
        time.sleep(3600)
