"""What every provider's batch client returns: the batch's status and its result lines."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterator

from core import strictjson

from .base import ProviderReply


@dataclass
class BatchStatus:
    state: str  # the provider's own name for it
    terminal: bool  # no further change will come
    counts: dict = field(default_factory=dict)
    output_ref: str = ""  # output file id / name, where the provider writes one
    error_ref: str = ""
    expires_at: datetime | None = None
    message: str = ""


@dataclass
class ResultLine:
    """One line of a provider's output: a reply, a failed request, or a problem with the line itself."""

    line_no: int
    custom_id: object = None
    reply: ProviderReply | None = None
    failure: dict | None = None  # {"code", "message", "status"}: the request failed or expired
    problem: str = ""  # the line is unreadable: refused
    source: str = "output"


def iter_jsonl(stream) -> Iterator[tuple[int, object, str]]:
    """(line number, parsed value or None, problem) for each non-blank line of a byte/str stream."""
    for number, raw in enumerate(stream, start=1):
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        try:
            yield number, strictjson.loads(text, allow_nan=True), ""
        except strictjson.TooDeep as exc:
            yield number, None, f"not valid JSON ({exc})"
        except (json.JSONDecodeError, RecursionError) as exc:
            yield number, None, f"not valid JSON ({exc}); a truncated file ends like this"
