"""Reading and validating CPRT-Bench rows (JSON, JSON Lines, parquet; streamed), and scoring
rows without storing them (score_labels).

Files are streamed: JSON Lines line by line, parquet in record batches. A `.json` file is one JSON
document (a list), so it is parsed whole, as plain dicts, never as ORM objects.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from annotations import taxonomy
from core import strictjson
from annotations.models import ID_PATTERN

from .. import engine
from .common import BenchFileError, CHUNK, FORMATS, LEVEL_KEYS


def file_format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise BenchFileError(path, [f"unknown file type {path.suffix!r}: use .json (a list), .jsonl or .parquet"])
    return fmt


def read_rows(path: Path) -> Iterator[tuple[str, object, str | None]]:
    """Yield (where, row, problem) for every row of a file; `problem` is set when a row could not be read.

    Problems that make the whole file unreadable (a JSON list that does not parse, a broken
    parquet file) raise BenchFileError at once.
    """
    path = Path(path)
    fmt = file_format(path)
    if not path.is_file():
        raise BenchFileError(path, ["no such file"])
    if fmt == "jsonl":
        yield from _read_jsonl(path)
    elif fmt == "json":
        yield from _read_json_list(path)
    else:
        yield from _read_parquet(path)


def json_problem(exc: Exception) -> str:
    """Why json.loads refused a text: a syntax error with its column, or what Python itself refuses in valid
    syntax (nesting too deep for the parser, an integer of more than 4300 digits)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, strictjson.TooDeep):
        return f"malformed JSON: {exc}"
    if isinstance(exc, RecursionError):
        return "malformed JSON: nested too deeply"
    return f"malformed JSON: {str(exc)[:200]}"


def _read_jsonl(path: Path):
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise BenchFileError(path, [f"unreadable: {exc.strerror or exc}"]) from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            where = f"line {number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield where, None, f"not UTF-8 (byte {exc.start + 1} of the line)"
                continue
            if not text.strip():
                continue  # blank lines, e.g. a trailing newline, carry no row
            try:
                row = strictjson.loads(text, allow_nan=True)  # NaN scores are refused by name later
            except (ValueError, RecursionError) as exc:
                yield where, None, json_problem(exc)
                continue
            yield where, row, None


def _read_json_list(path: Path):
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BenchFileError(path, [f"unreadable: {exc.strerror or exc}"]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BenchFileError(path, [f"line {line}: not UTF-8 (byte offset {exc.start})"]) from None
    try:
        data = strictjson.loads(text, allow_nan=True)
    except json.JSONDecodeError as exc:
        raise BenchFileError(path, [f"line {exc.lineno}, column {exc.colno}: malformed JSON: {exc.msg}"]) from None
    except (ValueError, RecursionError) as exc:
        raise BenchFileError(path, [json_problem(exc)]) from None
    if not isinstance(data, list):
        raise BenchFileError(path, ["a .json file must hold a JSON list of rows (use .jsonl for one row per line)"])
    for number, row in enumerate(data, start=1):
        yield f"row {number}", row, None


def _read_parquet(path: Path):
    wanted = ("id", "binary_labels", "level", "score")
    try:
        parquet = pq.ParquetFile(path)
        columns = [c for c in wanted if c in parquet.schema_arrow.names]
        number = 0
        for batch in parquet.iter_batches(batch_size=CHUNK, columns=columns):
            for row in batch.to_pylist():
                number += 1
                yield f"row {number}", row, None
    except (pa.ArrowException, OSError) as exc:
        raise BenchFileError(path, [f"not a readable parquet file: {exc}"]) from None


def _show(value, limit: int = 80) -> str:
    """A value as a problem message quotes it: as JSON where it can be (parquet also gives bytes, dates,
    decimals), cut to `limit` characters so that a 2 MB value does not make a 2 MB message."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _key(key) -> str:
    text = repr(key)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value) -> bool:
    # bool is a subclass of int in Python; true/false are not labels or levels.
    return type(value) is int


def parse_labels(value, tax: taxonomy.Taxonomy) -> tuple[tuple[int, ...] | None, list[str]]:
    """Nested binary labels -> one 0/1 per attribute in taxonomy order, or the problems found."""
    if not isinstance(value, dict):
        return None, ["binary_labels must be an object with keys level1..level4"]
    problems = [f"unknown level {_key(key)} in binary_labels" for key in value if key not in LEVEL_KEYS]
    level_of = tax.level_of
    found: dict[str, object] = {}
    unusable_levels: set[int] = set()  # reported once, not once per attribute
    for number, level_key in enumerate(LEVEL_KEYS, start=1):
        group = value.get(level_key)
        if group is None:
            problems.append(f"binary_labels.{level_key} is missing")
            unusable_levels.add(number)
            continue
        if not isinstance(group, dict):
            problems.append(f"binary_labels.{level_key} must be an object of attribute -> 0/1")
            unusable_levels.add(number)
            continue
        for key, label in group.items():
            if key not in level_of:
                problems.append(f"unknown attribute {_key(key)} in binary_labels.{level_key}")
                continue
            found[key] = label
            if level_of[key] != number:
                problems.append(f"attribute {key!r} is under {level_key} but belongs to level{level_of[key]}")
            elif not (_is_int(label) and label in (0, 1)):
                problems.append(f"binary_labels.{level_key}.{key} = {_show(label)}: a binary label is the integer 0 or 1")
    problems.extend(
        f"missing attribute {key!r} (level{level_of[key]})" for key in tax.keys if key not in found and level_of[key] not in unusable_levels
    )
    if problems:
        return None, problems
    return tuple(int(found[key]) for key in tax.keys), []


@dataclass(frozen=True)
class BenchRow:
    id: str
    labels: tuple[int, ...]  # one 0/1 per attribute, in taxonomy order
    level: int
    score: float


def parse_row(row, tax: taxonomy.Taxonomy) -> tuple[BenchRow | None, list[str]]:
    if not isinstance(row, dict):
        return None, ["a row must be a JSON object"]
    problems: list[str] = []
    row_id = row.get("id")
    if row_id is None or row_id == "":
        problems.append("missing id")
    elif not isinstance(row_id, str) or not ID_PATTERN.match(row_id):
        problems.append(f"id {_show(row_id)} is not a VISPR id (letters, digits, '_', '.', '-'; at most 64)")
    if "binary_labels" not in row:
        problems.append("missing binary_labels")
        labels = None
    else:
        labels, label_problems = parse_labels(row["binary_labels"], tax)
        problems.extend(label_problems)
    level = row.get("level")
    if level is None:
        problems.append("missing level")
    elif not (_is_int(level) and 1 <= level <= 4):
        problems.append(f"level {_show(level)} is not an integer from 1 to 4")
    score = row.get("score")
    if score is None:
        problems.append("missing score")
    elif type(score) not in (int, float) or not math.isfinite(score):
        problems.append(f"score {_show(score)} is not a number")
    elif not 0 <= score <= 1:
        problems.append(f"score {score!r} is outside [0, 1]")
    if problems:
        return None, problems
    return BenchRow(id=row_id, labels=labels, level=level, score=float(score)), []


def level_counts(labels: Sequence[int], tax: taxonomy.Taxonomy) -> tuple[int, int, int, int]:
    counts = [0, 0, 0, 0]
    for attribute, label in zip(tax.attributes, labels):
        counts[attribute.level - 1] += label
    return tuple(counts)


def check_rows(path: Path, tax: taxonomy.Taxonomy, problems: list[tuple[int, str]]) -> Iterator[tuple[int, str, str, BenchRow | None]]:
    """Validate every row of a file in one pass, keeping nothing per row.

    Yields (position, where, id, row) for every row whose id is a VISPR id: `row` is None when the row has
    problems, which are appended to `problems` as (position, text). Duplicate ids are the caller's to
    find, with `duplicate_problem`: in memory (`scan_file`) or in the database (the COPY path).
    """
    quick = _quick_parser(tax)
    for position, (where, raw, problem) in enumerate(read_rows(path)):
        if problem is not None:
            problems.append((position, f"{where}: {problem}"))
            continue
        row = quick(raw)
        if row is not None:
            yield position, where, row.id, row
            continue
        row, row_problems = parse_row(raw, tax)
        if row is not None:
            yield position, where, row.id, row
            continue
        problems.extend((position, f"{where}: {p}") for p in row_problems)
        # Still note the id, so that a later duplicate of a bad row is reported too (only a VISPR id can be one).
        if isinstance(raw, dict) and isinstance(raw.get("id"), str) and ID_PATTERN.match(raw["id"]):
            yield position, where, raw["id"], None


def _quick_parser(tax: taxonomy.Taxonomy):
    """A check of the common row, exactly as parse_row wants it, that builds no message: it returns the
    BenchRow parse_row would return, or None for parse_row to say what is wrong (or accept what this does not)."""
    groups = tuple((f"level{level}", set(tax.keys_of_level(level))) for level in engine.LEVELS)
    keys = tax.keys

    def quick(raw) -> BenchRow | None:
        if type(raw) is not dict:
            return None
        row_id, labels, level, score = raw.get("id"), raw.get("binary_labels"), raw.get("level"), raw.get("score")
        if (type(row_id) is not str or not ID_PATTERN.match(row_id) or type(labels) is not dict or len(labels) != len(groups)
                or type(level) is not int or not 1 <= level <= 4 or type(score) not in (int, float) or not 0 <= score <= 1):
            return None
        flat: dict = {}
        for level_key, wanted in groups:
            group = labels.get(level_key)
            if type(group) is not dict or group.keys() != wanted:
                return None
            flat.update(group)
        values = tuple(flat[key] for key in keys)
        if not all(type(v) is int and (v == 0 or v == 1) for v in values):
            return None
        return BenchRow(id=row_id, labels=values, level=level, score=float(score))

    return quick


def duplicate_problem(where: str, row_id: str, first_where: str) -> str:
    return f"{where}: duplicate id {row_id!r} (first at {first_where})"


def refuse_on_problems(path: Path, problems: list[tuple[int, str]], rows: int) -> None:
    """Raise BenchFileError listing every problem in file order ("no rows" for a file without any row)."""
    listed = [text for _, text in sorted(problems, key=lambda problem: problem[0])]
    if not listed and not rows:
        listed.append("no rows")
    if listed:
        raise BenchFileError(path, listed)


def scan_file(path: Path, tax: taxonomy.Taxonomy) -> int:
    """Validate every row; raise BenchFileError listing every problem, or return the number of rows."""
    problems: list[tuple[int, str]] = []
    first_seen: dict[str, str] = {}
    rows = 0
    for position, where, row_id, row in check_rows(path, tax, problems):
        if row_id in first_seen:
            if row is not None:
                problems.append((position, duplicate_problem(where, row_id, first_seen[row_id])))
            continue
        first_seen[row_id] = where
        rows += row is not None
    refuse_on_problems(path, problems, rows)
    return rows


def iter_valid_rows(path: Path, tax: taxonomy.Taxonomy) -> Iterator[BenchRow]:
    """Second pass over an already scanned file; refuses a file that changed in between."""
    for where, raw, problem in read_rows(path):
        row, problems = (None, [problem]) if problem else parse_row(raw, tax)
        if row is None:
            raise BenchFileError(path, [f"{where}: {p} (the file changed during the import)" for p in problems])
        yield row


# Scoring rows without storing them (score_labels)


def score_row(row, tax: taxonomy.Taxonomy, bounds: engine.Bounds, weights: Sequence[int] = engine.WEIGHTS) -> tuple[dict | None, list[str]]:
    """A row with nested binary_labels -> the same row with `level` and `score` from the engine."""
    if not isinstance(row, dict):
        return None, ["a row must be a JSON object"]
    if "binary_labels" not in row:
        return None, ["missing binary_labels"]
    labels, problems = parse_labels(row["binary_labels"], tax)
    if labels is None:
        return None, problems
    level, score = engine.severity(level_counts(labels, tax), bounds, weights)
    row["level"] = level
    row["score"] = score
    return row, []
