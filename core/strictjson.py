"""JSON as other programs read it: no NaN or Infinity (literal, or a number too large for a float), and
no nesting deeper than MAX_DEPTH levels.

Python's json module accepts `NaN`, `Infinity` and `1e400` (read as inf); PostgreSQL's jsonb, the
API's clients and the CPRT-Bench files do not. Every place that reads JSON from outside uses `loads`.

Nesting: a 200 KB file of 100,000 `[` makes json.loads raise RecursionError (and one a little under
the interpreter's limit parses, then breaks whatever walks it later). No file this project reads is
more than a dozen levels deep, so every reader refuses anything deeper than MAX_DEPTH before parsing,
with one line that says so ([decision]: one limit for every reader, checked before json sees the text).
"""
from __future__ import annotations

import gc
import itertools
import json
import math
import operator
import re

MAX_DEPTH = 100

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeep(ValueError):
    """The text nests arrays/objects deeper than the limit; the message says so in one line."""


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def depth(text: str | bytes) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings do not count)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_depth(text: str | bytes, limit: int = MAX_DEPTH) -> None:
    """TooDeep when `text` nests deeper than `limit` levels."""
    openers = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if openers > limit and depth(text) > limit:  # fewer openers than the limit cannot nest past it
        raise TooDeep(f"nested too deeply (more than {limit} levels of arrays and objects)")


def loads(text: str | bytes, *, allow_nan: bool = False):
    """json.loads that refuses nesting deeper than MAX_DEPTH (TooDeep) and, unless `allow_nan`, NaN/Infinity;
    raises ValueError (json.JSONDecodeError for syntax)."""
    check_depth(text)
    if allow_nan:
        return json.loads(text)
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def loads_jsonl(data: bytes) -> list | None:
    """The values `loads(line, allow_nan=True)` gives for the non-empty lines of UTF-8 `data` (lines ending at
    "\n", a "\r" before it being whitespace), read in bulk by msgspec's C decoder (issue 37: 3-4x json's
    scanner); or None where a line must go to `loads` itself, to be read or refused with its line number: a line
    that is not one JSON value (whitespace alone, two values, a syntax error, a lone "\r" inside it), not UTF-8,
    NaN or Infinity, a number too large for a float, or nested deeper than MAX_DEPTH (msgspec reads deeper).
    Where msgspec reads a value, it is json's: integers of any size exact, floats correctly rounded, the last of
    repeated keys (tests/core/test_strictjson.py compares them)."""
    import msgspec  # imported where used (start-up time: 36 ms)

    lines = data.split(b"\n")
    collecting = gc.isenabled()
    gc.disable()  # the values hold no cycles; collections while 100,000 rows pile up cost a third of the read
    try:
        for many in itertools.compress(lines, map(MAX_DEPTH.__lt__, map(operator.add, map(bytes.count, lines, itertools.repeat(b"[")),
                                                                         map(bytes.count, lines, itertools.repeat(b"{"))))):
            check_depth(many)
        return list(map(msgspec.json.Decoder().decode, filter(None, lines)))
    except (msgspec.MsgspecError, ValueError, RecursionError):  # TooDeep and UnicodeDecodeError are ValueErrors
        return None
    finally:
        if collecting:
            gc.enable()
