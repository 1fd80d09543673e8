"""A fake OpenAI Chat Completions server (also what vLLM speaks): POST /v1/chat/completions, plus the
Files and Batches endpoints (`openai_batches`).

Run standalone for benchmarks: `python -m tests.fakes.openai_server --port 8911 --delay 0.2 --processes 4`.
"""
from __future__ import annotations

import argparse
import functools
import base64
import hashlib
import json
import time

from .openai_batches import OpenAIBatchesMixin
from .server import FakeServer, Reply, model_answer, schema_kind, serve_forever


def completion(content: str | None, model: str = "fake-model", refusal: str | None = None, finish_reason: str = "stop",
               prompt_tokens: int = 1200, completion_tokens: int = 80) -> dict:
    return {
        "id": f"chatcmpl-fake-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        # The stand-in's mark: a run that gets a reply carrying it shows the "stand-in" badge (inference.results).
        "system_fingerprint": "cprt-stand-in",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    }


def ok(content, **kw) -> Reply:
    """A completion whose message content is `content` (a dict is sent as its JSON text)."""
    return Reply(body=completion(json.dumps(content) if isinstance(content, dict) else content, **kw))


def refusal(text: str = "I'm sorry, I can't help with that.") -> Reply:
    return Reply(body=completion(None, refusal=text))


def error(status: int, message: str = "fake error", headers: dict | None = None, delay: float = 0.0) -> Reply:
    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status, "server_error")
    return Reply(status=status, body={"error": {"message": message, "type": kind, "code": kind}}, headers=headers or {}, delay=delay)


def request_images(payload: dict) -> list[bytes]:
    """Every image of a chat-completions request (or a batch line's body), in the order sent."""
    images = []
    for message in payload.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image_url":
                images.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return images


def request_parts(payload: dict) -> tuple[str, bytes | None, dict, str]:
    """(user text, image bytes, json schema, schema name) of a chat-completions request."""
    text, image = "", None
    for message in payload.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text += content
            continue
        for part in content or []:
            if part.get("type") == "text":
                text += part.get("text", "")
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"]
                image = base64.b64decode(url.split(",", 1)[1])
    fmt = (payload.get("response_format") or {}).get("json_schema") or {}
    return text, image, fmt.get("schema") or {}, fmt.get("name", "")


class FakeOpenAIServer(OpenAIBatchesMixin, FakeServer):
    """`echo_authorization=STATUS`: answer every request with that error status and a body that
    repeats the request's Authorization header and the bare key (as some proxies and gateways do)."""

    def __init__(self, *args, echo_authorization: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.echo_authorization = echo_authorization

    def matches(self, path: str) -> bool:
        return path.endswith("/chat/completions")

    def request_key(self, payload: dict) -> str | None:
        images = request_images(payload)
        return hashlib.sha256(b"".join(hashlib.sha256(i).digest() for i in images)).hexdigest() if images else None

    def reply_for(self, path: str, payload: dict, headers: dict) -> Reply:
        if self.echo_authorization is None:
            return self.default_reply(path, payload)
        authorization = headers.get("authorization", "")
        key = authorization.split(" ", 1)[-1]
        message = f"upstream rejected the request with Authorization: {authorization} (key {key})"
        return error(self.echo_authorization, message, headers={"X-Echo-Authorization": authorization})

    def default_reply(self, path: str, payload: dict) -> Reply:
        text, image, schema, _name = request_parts(payload)
        answer = model_answer(schema_kind(schema), schema, image, text, request_images(payload))
        return ok(answer, model=payload.get("model", "fake-model"))


# `--answer`: a broken provider that answers every model request the same way (bench/run_faults.py).
BROKEN_ANSWERS = {
    "html": lambda: Reply(body="<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>", headers={"Content-Type": "text/html"}),
    "500": lambda: error(500, "The server had an error while processing your request."),
    "401": lambda: error(401, "Incorrect API key provided."),
    "404": lambda: error(404, "The model `bench-model` does not exist or you do not have access to it."),
}


class BrokenOpenAIServer(FakeOpenAIServer):
    def __init__(self, *args, answer: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.answer = answer

    def reply_for(self, path: str, payload: dict, headers: dict) -> Reply:
        return BROKEN_ANSWERS[self.answer]()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--answer", choices=sorted(BROKEN_ANSWERS), help="answer every model request with this (a broken provider)")
    args = parser.parse_args()
    if args.answer:
        make = functools.partial(BrokenOpenAIServer, delay=args.delay, record=False, answer=args.answer)
    else:
        make = functools.partial(FakeOpenAIServer, delay=args.delay, record=False)
    serve_forever(make, args.port, args.processes)


if __name__ == "__main__":
    main()
