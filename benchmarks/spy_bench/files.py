"""Reading SPY-Bench files: the benchmark file, label2text.json and evaluated JSONL (upstream's
row format). Every problem is a `BenchmarkError` / `MetricsError` that names the file, the line or
item, and what is wrong; nothing is written before a whole file has been read and checked."""
from __future__ import annotations

import json

from core import strictjson

from .metrics import MetricsError
from .upstream import BenchmarkError, check_benchmark, check_label2text

MAX_BYTES = 200 * 2**20  # a benchmark or evaluated file larger than this is refused


def _text(data: bytes, name: str) -> str:
    if len(data) > MAX_BYTES:
        raise BenchmarkError(f"{name}: {len(data)} bytes, over the limit of {MAX_BYTES}.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BenchmarkError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None


def load_json(data: bytes, name: str):
    try:
        return strictjson.loads(_text(data, name), allow_nan=True)
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
    except strictjson.TooDeep as exc:
        raise BenchmarkError(f"{name}: not valid JSON ({exc}).") from None


def read_label2text(data: bytes, name: str = "label2text") -> dict[str, str]:
    try:
        return check_label2text(load_json(data, name))
    except BenchmarkError as exc:
        raise BenchmarkError(str(exc).replace("label2text:", f"{name}:", 1)) from None


def read_benchmark(data: bytes, label2text: dict[str, str], name: str = "benchmark file") -> list[dict]:
    try:
        return check_benchmark(load_json(data, name), label2text)
    except BenchmarkError as exc:
        raise BenchmarkError(str(exc).replace("benchmark file:", f"{name}:", 1)) from None


def read_rows(data: bytes, name: str = "evaluated file") -> list[dict]:
    """One JSON object per non-empty line; lines end where Python's open() ends them when upstream iterates a
    file ("\n", "\r\n" or "\r"), so U+2028 and the like, which a model's answer may hold and
    `json.dumps(..., ensure_ascii=False)` writes as they are, stay inside their line."""
    rows = strictjson.loads_jsonl(data) if len(data) <= MAX_BYTES else None  # every line plain: read in bulk
    if rows and list(map(type, rows)).count(dict) == len(rows):
        return rows
    try:  # a line strictjson.loads must read (or refuse) itself, or a line that is not an object
        text = _text(data, name)
    except BenchmarkError as exc:
        raise MetricsError(str(exc)) from None
    rows = []
    for n, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = strictjson.loads(line, allow_nan=True)
        except json.JSONDecodeError as exc:
            raise MetricsError(f"{name} line {n}: not valid JSON ({exc.msg}).") from None
        except strictjson.TooDeep as exc:
            raise MetricsError(f"{name} line {n}: not valid JSON ({exc}).") from None
        if not isinstance(row, dict):
            raise MetricsError(f"{name} line {n}: expected a JSON object.")
        rows.append(row)
    if not rows:
        raise MetricsError(f"{name}: no rows.")
    return rows


def write_rows(rows: list[dict]) -> str:
    """JSONL as upstream writes it (`json.dumps` with its defaults, one row a line)."""
    return "".join(json.dumps(row) + "\n" for row in rows)
