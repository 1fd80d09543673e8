"""JSON as other programs read it: no NaN or Infinity (literal, or a number too large for a float).

Python's json module accepts `NaN`, `Infinity` and `1e400` (read as inf); PostgreSQL's jsonb, the
API's clients and the CPRT-Bench files do not. Every place that reads JSON from outside uses `loads`.
"""
from __future__ import annotations

import json
import math


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def loads(text: str | bytes):
    """json.loads that refuses NaN/Infinity; raises ValueError (json.JSONDecodeError for syntax)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
