"""CPRT-Bench rows in and out: strict parsing, import with boundary fitting, Hugging Face export.

The import_cprt, score_labels and export_hf commands are thin wrappers around this module; the
browser export job calls `export_dataset` with a progress callback.

Files are streamed: JSON Lines line by line, parquet in record batches. A `.json` file is one JSON
document (a list), so it is parsed whole, as plain dicts, never as ORM objects. Importing reads the
file twice: a validation pass that keeps only ids and per-level counts (for duplicate detection and
the boundary fit), then a write pass in chunks, all inside one transaction.
"""
from __future__ import annotations

import dataclasses
import json
import math
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import connection, transaction
from django.utils import timezone

from annotations import taxonomy
from annotations.models import ID_PATTERN, Annotator, Image, Label, Labeling
from core.audit import audit
from inference.models import Run, RunResult

from . import engine
from .models import ImageScore, ScoringProfile
from .services import recompute_scores

DEFAULT_PROFILE = "cprt-bench"
LEVEL_KEYS = ("level1", "level2", "level3", "level4")
FORMATS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
SPLITS = tuple(value for value, _ in Image.SPLITS)
CHUNK = 500
MAX_LISTED_PROBLEMS = 200
REPRODUCES_BELOW = 1e-4
EXPORT_MARKER = "<!-- cprt-workbench export -->"


class BenchFileError(ValueError):
    """A file of CPRT-Bench rows was refused as a whole; `problems` says where and why."""

    def __init__(self, path: Path | str, problems: list[str]):
        self.path = str(path)
        self.problems = problems
        listed = problems[:MAX_LISTED_PROBLEMS]
        more = len(problems) - len(listed)
        text = f"{self.path}: refused, nothing was written ({len(problems)} problem{'s' if len(problems) != 1 else ''}):\n"
        text += "\n".join(f"  {p}" for p in listed)
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(text)


class ExportError(ValueError):
    """An export was refused before anything was written."""


# ---------------------------------------------------------------------------------------------
# Reading and validating rows


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
                row = json.loads(text)
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
        data = json.loads(text)
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


@dataclass
class ScannedFile:
    """What the validation pass keeps: enough for the fit and the report, nothing per attribute."""

    ids: list[str]
    counts: np.ndarray  # (rows, 4) per-level counts of 1-labels
    scores: np.ndarray  # published scores
    levels: np.ndarray  # published levels


def scan_file(path: Path, tax: taxonomy.Taxonomy) -> ScannedFile:
    """Validate every row; raise BenchFileError listing every problem, or return the fit inputs."""
    problems: list[str] = []
    first_seen: dict[str, str] = {}
    counts: list[tuple[int, int, int, int]] = []
    scores: list[float] = []
    levels: list[int] = []
    for where, raw, problem in read_rows(path):
        if problem is not None:
            problems.append(f"{where}: {problem}")
            continue
        row, row_problems = parse_row(raw, tax)
        if row is None:
            problems.extend(f"{where}: {p}" for p in row_problems)
            # Still note the id, so that a later duplicate of a bad row is reported too.
            if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"] not in first_seen:
                first_seen[raw["id"]] = where
            continue
        if row.id in first_seen:
            problems.append(f"{where}: duplicate id {row.id!r} (first at {first_seen[row.id]})")
            continue
        first_seen[row.id] = where
        counts.append(level_counts(row.labels, tax))
        scores.append(row.score)
        levels.append(row.level)
    if not problems and not counts:
        problems.append("no rows")
    if problems:
        raise BenchFileError(path, problems)
    return ScannedFile(
        ids=list(first_seen),
        counts=np.array(counts, dtype=np.int64).reshape(-1, 4),
        scores=np.array(scores, dtype=float),
        levels=np.array(levels, dtype=np.int64),
    )


def iter_valid_rows(path: Path, tax: taxonomy.Taxonomy) -> Iterator[BenchRow]:
    """Second pass over an already scanned file; refuses a file that changed in between."""
    for where, raw, problem in read_rows(path):
        row, problems = (None, [problem]) if problem else parse_row(raw, tax)
        if row is None:
            raise BenchFileError(path, [f"{where}: {p} (the file changed during the import)" for p in problems])
        yield row


# ---------------------------------------------------------------------------------------------
# Import


@dataclass
class ImportResult:
    rows: int
    images_created: int
    images_updated: int
    split_differs: list[str]  # ids of existing images whose split is not the one given (kept as they were)
    profile: ScoringProfile
    fit: engine.BoundaryFit
    mismatches: list[dict]  # {"id", "published", "computed"} for every row whose level is not l*
    activated: bool
    not_activated_reason: str
    scored: dict = field(default_factory=dict)


def check_profile_name(name: str) -> str:
    try:
        validate_slug(name)
    except ValidationError:
        raise ValueError(f"Profile name {_key(name)} must be a slug (letters, digits, '-', '_').") from None
    if len(name) > 64:
        raise ValueError("Profile name is longer than 64 characters.")
    return name


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}: use one of {', '.join(SPLITS)}.")
    return split


def import_bench_file(path: Path | str, split: str, profile_name: str = DEFAULT_PROFILE, actor=None) -> ImportResult:
    """Validate a CPRT-Bench file, then store its rows, fit and store the profile, and rescore, atomically."""
    path = Path(path)
    check_split(split)
    check_profile_name(profile_name)
    tax = taxonomy.active()
    if len(tax.keys) != sum(engine.LEVEL_MAXIMA) or tax.level_maxima != engine.LEVEL_MAXIMA:
        raise ValueError(f"The active taxonomy has {tax.level_maxima} attributes per level; the score needs {engine.LEVEL_MAXIMA}.")
    scanned = scan_file(path, tax)
    fit = engine.fit_bounds(scanned.counts, scanned.scores, scanned.levels)
    computed_levels = [engine.determined_level(c) or 4 for c in scanned.counts]
    mismatches = [
        {"id": scanned.ids[i], "published": int(scanned.levels[i]), "computed": int(computed_levels[i])}
        for i in fit.level_mismatches
    ]
    with transaction.atomic():
        annotator = Annotator.ground_truth(profile_name)
        source = f"CPRT-Bench import of {path.name}"
        image_ids, created, updated, split_differs = _store_rows(path, tax, split, annotator, source)
        profile, activated, reason = _store_profile(profile_name, path, split, tax, scanned, fit, mismatches, annotator)
        scored = recompute_scores(profile, image_ids)
        audit(
            actor,
            "import_cprt",
            profile,
            file=path.name,
            split=split,
            rows=len(scanned.ids),
            images_created=created,
            profile_version=profile.version,
            bounds=[profile.lo1, profile.lo2, profile.lo3],
            max_residual=fit.max_residual,
            level_mismatches=len(mismatches),
            activated=activated,
        )
    return ImportResult(
        rows=len(scanned.ids),
        images_created=created,
        images_updated=updated,
        split_differs=split_differs,
        profile=profile,
        fit=fit,
        mismatches=mismatches,
        activated=activated,
        not_activated_reason=reason,
        scored=scored,
    )


def _chunked(items: Iterable, size: int = CHUNK) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _store_rows(path, tax, split, annotator, source) -> tuple[list[int], int, int, list[str]]:
    attr_ids = taxonomy.attribute_ids()
    attribute_pks = [attr_ids[key] for key in tax.keys]
    image_ids: list[int] = []
    created = updated = 0
    split_differs: list[str] = []
    image_table = connection.ops.quote_name(Image._meta.db_table)
    # Plain-value upserts: building ~150,000 Label instances through the ORM took minutes. The import is
    # one audited action, so no per-label history rows are written. ON CONFLICT works on SQLite and PostgreSQL.
    label_upsert = (
        f"INSERT INTO {connection.ops.quote_name(Label._meta.db_table)} "
        "(image_id, annotator_id, attribute_id, value, rationale, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (image_id, annotator_id, attribute_id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
    )
    for chunk in _chunked(iter_valid_rows(path, tax)):
        vispr_ids = [row.id for row in chunk]
        existing = {vid: (pk, s) for vid, pk, s in Image.objects.filter(vispr_id__in=vispr_ids).values_list("vispr_id", "id", "split")}
        new = [
            Image(vispr_id=row.id, split=split, source=source, published_level=row.level, published_score=row.score)
            for row in chunk
            if row.id not in existing
        ]
        Image.objects.bulk_create(new)
        created += len(new)
        updates = [(row.level, row.score, existing[row.id][0]) for row in chunk if row.id in existing]
        if updates:
            _execute_many(f"UPDATE {image_table} SET published_level = %s, published_score = %s WHERE id = %s", updates)
            updated += len(updates)
            split_differs.extend(vid for vid, (_, s) in existing.items() if s != split)
        pk_of = dict(Image.objects.filter(vispr_id__in=vispr_ids).values_list("vispr_id", "id"))
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        _execute_many(
            label_upsert,
            [
                (pk_of[row.id], annotator.pk, attribute_pk, float(value), "", now, now)
                for row in chunk
                for attribute_pk, value in zip(attribute_pks, row.labels)
            ],
        )
        image_ids.extend(pk_of[row.id] for row in chunk)
    return image_ids, created, updated, split_differs


def _execute_many(sql: str, rows: list[tuple]) -> None:
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def fit_report(path, split, tax, scanned: ScannedFile, fit: engine.BoundaryFit, mismatches: list[dict]) -> dict:
    return {
        "file": Path(path).name,
        "split": split,
        "rows": len(scanned.ids),
        "taxonomy_version": tax.version,
        "fitted_at": timezone.now().isoformat(timespec="seconds"),
        "method": "least squares of published score on sqrt(t) per level; lo(l) from the fit, hi(l) = lo(l-1)",
        "levels": [dataclasses.asdict(level_fit) for level_fit in fit.levels],
        "bounds_lo": list(fit.bounds.lo) if fit.bounds else None,
        "max_residual": fit.max_residual,
        "partition_gaps": fit.partition_gaps,
        "problems": fit.problems,
        "reproduces": fit.reproduces,
        "level_mismatches": mismatches,
    }


def _store_profile(name, path, split, tax, scanned, fit, mismatches, annotator) -> tuple[ScoringProfile, bool, str]:
    profile = ScoringProfile.objects.select_for_update().filter(name=name).first()
    if profile is None:
        profile = ScoringProfile(name=name, version=1, weights=list(engine.WEIGHTS))
    else:
        profile.version += 1
    if fit.bounds is not None:
        profile.lo1, profile.lo2, profile.lo3 = fit.bounds.lo[:3]
    elif profile.pk is None:
        profile.lo1, profile.lo2, profile.lo3 = engine.PROVISIONAL_LO[:3]
    reproduces = fit.reproduces
    if reproduces:
        reason = ""
    elif fit.bounds is None:
        reason = "the fit produced no valid boundaries: " + "; ".join(fit.problems)
    else:
        reason = f"the largest residual {fit.max_residual:.3g} is not below {REPRODUCES_BELOW:g}: the formula does not reproduce the published scores"
    profile.provisional = not reproduces
    when = timezone.now().strftime("%Y-%m-%d")
    if reproduces:
        profile.source = (
            f"Fitted on {when} from CPRT-Bench file {Path(path).name} ({len(scanned.ids)} rows, split {split}); "
            f"largest residual {fit.max_residual:.3g}."
        )
    else:
        kept = "fitted but not trusted" if fit.bounds is not None else "kept from before (or the provisional default)"
        profile.source = (
            f"PROVISIONAL: imported on {when} from CPRT-Bench file {Path(path).name} ({len(scanned.ids)} rows, split {split}); "
            f"boundaries {kept} because {reason}."
        )
    profile.fit_report = fit_report(path, split, tax, scanned, fit, mismatches) | {"activated": reproduces}
    if not reproduces:
        # A profile whose boundaries do not reproduce the published scores must not stay the active one.
        profile.is_active = False
    profile.save()
    profile.consensus_annotators.set([annotator])
    if reproduces:
        profile.activate()
    return profile, reproduces, reason


# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Export (Hugging Face datasets layout: a folder of parquet files per configuration + a dataset card)
#
# Configurations: `default` (the CPRT-Bench rows, always, in data/), `annotations` (every annotator's
# raw labels and rationales) and `predictions` (every judge run's results), both only with
# include_annotations, and `images` (the stored, metadata-free bytes of the exported rows' images)
# only with include_images. People never appear by account name (see public_annotator_name), and
# nothing read from settings is written: an export holds rows, the card and image bytes only.

IMAGE_CHUNK = 50  # images per parquet write: bounds the memory held by image bytes
# `datasets` reads a parquet file's features from this schema metadata key; it is how the `image`
# column loads as an Image feature (decoded to PIL) instead of a plain struct of bytes and path.
HF_FEATURES_KEY = b"huggingface"
# config name -> (folder, summary key listing its files per split)
CONFIGS = {
    "default": ("data", "files"),
    "annotations": ("annotations", "annotation_files"),
    "predictions": ("predictions", "prediction_files"),
    "images": ("images", "image_files"),
}


def bench_schema(tax: taxonomy.Taxonomy) -> pa.Schema:
    labels = pa.struct(
        [(f"level{level}", pa.struct([(key, pa.int64()) for key in tax.keys_of_level(level)])) for level in engine.LEVELS]
    )
    return pa.schema([("id", pa.string()), ("binary_labels", labels), ("level", pa.int64()), ("score", pa.float64())])


def annotations_schema(tax: taxonomy.Taxonomy) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("annotator", pa.string()),
            ("annotator_kind", pa.string()),
            ("provider", pa.string()),
            ("model_name", pa.string()),
            ("prompt_version", pa.string()),
            ("labels", pa.struct([(key, pa.float64()) for key in tax.keys])),
            ("rationales", pa.struct([(key, pa.string()) for key in tax.keys])),
        ]
    )


def predictions_schema() -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("run_id", pa.int64()),
            ("provider", pa.string()),
            ("model_name", pa.string()),
            ("prompt_version", pa.string()),
            ("strategy", pa.string()),
            ("counterfactual_faces", pa.bool_()),
            ("outcome", pa.string()),
            ("predicted_score", pa.float64()),
            ("predicted_level", pa.int64()),
        ]
    )


def images_schema() -> pa.Schema:
    features = {"id": {"dtype": "string", "_type": "Value"}, "image": {"_type": "Image"}}
    schema = pa.schema([("id", pa.string()), ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())]))])
    return schema.with_metadata({HF_FEATURES_KEY: json.dumps({"info": {"features": features}}).encode()})


def nest(flat: dict[str, int], tax: taxonomy.Taxonomy) -> dict:
    return {f"level{level}": {key: int(flat[key]) for key in tax.keys_of_level(level)} for level in engine.LEVELS}


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise ExportError(f"{out_dir} exists and is not a folder.")
        readme = out_dir / "README.md"
        previous_export = readme.is_file() and EXPORT_MARKER in readme.read_text(encoding="utf-8", errors="replace")
        if any(out_dir.iterdir()) and not previous_export:
            raise ExportError(f"{out_dir} is not empty and is not a previous export: choose a new or empty folder.")


def _check_splits(splits: Sequence[str]) -> list[str]:
    splits = list(dict.fromkeys(splits))
    if not splits:
        raise ExportError("Name at least one split.")
    for split in splits:
        if split not in SPLITS:
            raise ExportError(f"Unknown split {split!r}: use {', '.join(SPLITS)}.")
    return splits


def _ground_truth_labels(image_ids: list[int], key_of: dict[int, str], preferred: set[int], n_keys: int) -> dict[int, dict[str, int]]:
    """image id -> binary labels of the imported ground truth.

    An image imported under several names has several ground-truth annotators; the profile's own
    consensus annotator wins, otherwise the most recently written complete set.
    """
    per_pair: dict[tuple[int, int], dict[str, float]] = {}
    latest: dict[tuple[int, int], datetime] = {}
    for image_id, annotator_id, attribute_id, value, updated_at in Label.objects.filter(
        image_id__in=image_ids, annotator__kind=Annotator.KIND_GROUND_TRUTH
    ).values_list("image_id", "annotator_id", "attribute_id", "value", "updated_at"):
        key = key_of.get(attribute_id)
        if key is None:
            continue
        pair = (image_id, annotator_id)
        per_pair.setdefault(pair, {})[key] = value
        latest[pair] = max(latest.get(pair, updated_at), updated_at)
    chosen: dict[int, tuple[tuple[bool, datetime], dict[str, float]]] = {}
    for (image_id, annotator_id), values in per_pair.items():
        if len(values) != n_keys:
            continue
        rank = (annotator_id in preferred, latest[(image_id, annotator_id)])
        if image_id not in chosen or rank > chosen[image_id][0]:
            chosen[image_id] = (rank, values)
    return {image_id: {k: engine.binarise(v) for k, v in values.items()} for image_id, (_, values) in chosen.items()}


def export_dataset(
    out_dir: Path | str,
    splits: Sequence[str] = ("train", "test"),
    profile: ScoringProfile | None = None,
    include_annotations: bool = False,
    progress: Callable[[int, int], None] | None = None,
    actor=None,
    *,
    include_images: bool = False,
) -> dict:
    """Write the CPRT-Bench layout (parquet per configuration and split + dataset card) into `out_dir`; return a summary.

    Rows imported from CPRT-Bench keep their published level and score; other images take their
    ImageScore under `profile` (default: the active one); images with neither are skipped and
    counted. `include_annotations` adds the `annotations` and `predictions` configurations,
    `include_images` the `images` configuration. The export is built in a sibling folder and swapped
    in at the end, so a failure leaves a previous export untouched. `progress(done, total)` is called
    after every chunk of images of every pass.
    """
    out_dir = Path(out_dir).resolve()
    splits = _check_splits(splits)
    profile = profile or ScoringProfile.active()
    _check_out_dir(out_dir)
    tax = taxonomy.active()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-export-", dir=out_dir.parent))
    try:
        summary = _write_export(staging, splits, profile, tax, include_annotations, include_images, progress)
        _swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary["out_dir"] = str(out_dir)
    audit(
        actor,
        "export_hf",
        profile,
        out_dir=str(out_dir),
        splits={s: summary["splits"][s]["rows"] for s in splits},
        include_annotations=include_annotations,
        include_images=include_images,
    )
    return summary


def _swap_in(staging: Path, out_dir: Path) -> None:
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}-previous")
        shutil.rmtree(old, ignore_errors=True)
        out_dir.rename(old)
        staging.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(out_dir)
    out_dir.chmod(0o755)  # mkdtemp made it private to us; an export folder is meant to be read


def _write_parquet(target: Path, schema, ids: list[int], make_rows, advance, size: int = CHUNK) -> int:
    """Stream the rows made for `ids`, chunk by chunk, into one parquet file (none when no row); returns the row count."""
    writer = None
    written = 0
    try:
        for chunk in _chunked(ids, size):
            rows = make_rows(chunk)
            if rows:
                if writer is None:
                    target.parent.mkdir(exist_ok=True)
                    writer = pq.ParquetWriter(target, schema)
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                written += len(rows)
            advance(len(chunk))
    finally:
        if writer is not None:
            writer.close()
    return written


def _write_config(root: Path, summary: dict, config: str, split: str, schema, ids, make_rows, advance, size: int = CHUNK) -> int:
    """One configuration's parquet file of one split; listed in the summary when it has rows."""
    folder, files_key = CONFIGS[config]
    path = f"{folder}/{split}.parquet"
    count = _write_parquet(root / path, schema, ids, make_rows, advance, size)
    if count:
        summary[files_key][split] = path
    return count


def _write_export(root: Path, splits, profile, tax, include_annotations, include_images, progress) -> dict:
    attr_ids = taxonomy.attribute_ids()
    key_of = {pk: key for key, pk in attr_ids.items()}
    preferred = set(profile.consensus_annotators.filter(kind=Annotator.KIND_GROUND_TRUTH).values_list("id", flat=True))
    ids_by_split = {s: list(Image.objects.filter(split=s).order_by("vispr_id").values_list("id", flat=True)) for s in splits}
    passes = 1 + (2 if include_annotations else 0) + (1 if include_images else 0)
    total = sum(len(ids) for ids in ids_by_split.values()) * passes
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    summary: dict = {
        "profile": profile.label,
        "include_annotations": include_annotations,
        "include_images": include_images,
        "splits": {},
        "annotators": {},  # public name -> kind, provider, model, prompt version, rows (annotations config)
        "prediction_runs": {},  # run id -> provider, model, prompt version, strategy, rows (predictions config)
        **{files_key: {} for _, files_key in CONFIGS.values()},
    }
    exported: dict[str, set[int]] = {}  # split -> ids of the images that have a row in `default`
    for split in splits:
        stats = {"rows": 0, "published": 0, "computed": 0, "skipped_no_score": 0, "skipped_no_labels": 0, "levels": {lv: 0 for lv in engine.LEVELS}}
        exported[split] = set()
        make_rows = lambda chunk, stats=stats, seen=exported[split]: _export_rows(chunk, profile, tax, key_of, preferred, stats, seen)  # noqa: E731
        _write_config(root, summary, "default", split, bench_schema(tax), ids_by_split[split], make_rows, advance)
        summary["splits"][split] = stats
    if not summary["files"]:
        raise ExportError(f"Nothing to export: no image of {', '.join(splits)} has a published or computed score under {profile.label}.")
    if include_annotations:
        annotators = {a["id"]: a for a in Annotator.objects.values("id", "name", "kind", "provider", "model_name", "prompt_version")}
        for split in splits:
            make_rows = lambda chunk: _annotation_rows(chunk, tax, key_of, annotators, summary["annotators"])  # noqa: E731
            count = _write_config(root, summary, "annotations", split, annotations_schema(tax), ids_by_split[split], make_rows, advance)
            summary["splits"][split]["annotation_rows"] = count
        for split in splits:
            make_rows = lambda chunk: _prediction_rows(chunk, profile.bounds, summary["prediction_runs"])  # noqa: E731
            count = _write_config(root, summary, "predictions", split, predictions_schema(), ids_by_split[split], make_rows, advance)
            summary["splits"][split]["prediction_rows"] = count
    if include_images:
        for split in splits:
            make_rows = lambda chunk, seen=exported[split]: _image_rows(chunk, seen)  # noqa: E731
            count = _write_config(root, summary, "images", split, images_schema(), ids_by_split[split], make_rows, advance, IMAGE_CHUNK)
            summary["splits"][split]["image_rows"] = count
            summary["splits"][split]["rows_without_image"] = summary["splits"][split]["rows"] - count
    (root / "README.md").write_text(dataset_card(profile, tax, summary, include_annotations, include_images), encoding="utf-8")
    return summary


def _export_rows(chunk, profile, tax, key_of, preferred, stats, exported: set[int]) -> list[dict]:
    images = Image.objects.filter(id__in=chunk).order_by("vispr_id").values_list("id", "vispr_id", "published_level", "published_score")
    scores = {
        image_id: (labels, level, score)
        for image_id, labels, level, score in ImageScore.objects.filter(profile=profile, image_id__in=chunk).values_list(
            "image_id", "binary_labels", "level", "score"
        )
    }
    ground_truth = _ground_truth_labels(chunk, key_of, preferred, len(tax.keys))
    rows = []
    for image_id, vispr_id, published_level, published_score in images:
        if published_level is not None and published_score is not None:
            labels = ground_truth.get(image_id)
            if labels is None:
                stats["skipped_no_labels"] += 1
                continue
            level, score = published_level, published_score
            stats["published"] += 1
        elif image_id in scores:
            labels, level, score = scores[image_id]
            stats["computed"] += 1
        else:
            stats["skipped_no_score"] += 1
            continue
        rows.append({"id": vispr_id, "binary_labels": nest(labels, tax), "level": int(level), "score": float(score)})
        exported.add(image_id)
        stats["rows"] += 1
        stats["levels"][int(level)] += 1
    return rows


def public_annotator_name(annotator: dict) -> str:
    # People are exported under a stable pseudonym: account names can be personal (or e-mail addresses).
    if annotator["kind"] == Annotator.KIND_HUMAN:
        return f"human-{annotator['id']}"
    return annotator["name"]


def public_annotator(annotator: dict) -> dict:
    """What an export may say about an annotator: a model's provider, model and prompt version; of a person, nothing."""
    human = annotator["kind"] == Annotator.KIND_HUMAN
    return {
        "name": public_annotator_name(annotator),
        "kind": annotator["kind"],
        "provider": "" if human else annotator["provider"],
        "model_name": "" if human else annotator["model_name"],
        "prompt_version": "" if human else annotator["prompt_version"],
    }


def _annotation_rows(chunk, tax, key_of, annotators: dict[int, dict], seen: dict) -> list[dict]:
    """One row per (image, annotator) with submitted labels; `annotators`: id -> its fields, read once per export."""
    vispr_of = dict(Image.objects.filter(id__in=chunk).values_list("id", "vispr_id"))
    # Unfinished work (a draft labeling) is not an annotation yet.
    drafts = set(Labeling.objects.filter(image_id__in=chunk, status=Labeling.STATUS_DRAFT).values_list("image_id", "annotator_id"))
    pairs: dict[tuple[int, int], tuple[dict, dict]] = {}
    for image_id, annotator_id, attribute_id, value, rationale in Label.objects.filter(image_id__in=chunk).values_list(
        "image_id", "annotator_id", "attribute_id", "value", "rationale"
    ):
        key = key_of.get(attribute_id)
        if key is None or (image_id, annotator_id) in drafts:
            continue
        values, rationales = pairs.setdefault((image_id, annotator_id), ({}, {}))
        values[key] = value
        rationales[key] = rationale
    rows = []
    for (image_id, annotator_id), (values, rationales) in sorted(pairs.items(), key=lambda p: (vispr_of[p[0][0]], annotators[p[0][1]]["name"])):
        public = public_annotator(annotators[annotator_id])
        rows.append(
            {
                "id": vispr_of[image_id],
                "annotator": public["name"],
                "annotator_kind": public["kind"],
                "provider": public["provider"],
                "model_name": public["model_name"],
                "prompt_version": public["prompt_version"],
                "labels": {k: values.get(k) for k in tax.keys},
                "rationales": {k: rationales.get(k) for k in tax.keys},
            }
        )
        entry = seen.setdefault(public["name"], {**public, "rows": 0})
        entry["rows"] += 1
    return rows


def _prediction_rows(chunk, bounds: engine.Bounds, seen: dict) -> list[dict]:
    """One row per result of a judge run (annotate runs' labels are in the `annotations` configuration)."""
    results = (
        RunResult.objects.filter(image_id__in=chunk, run__task=Run.TASK_JUDGE)
        .order_by("image__vispr_id", "run_id")
        .values_list(
            "image__vispr_id", "run_id", "run__provider", "run__model_name", "run__prompt_version", "run__strategy",
            "run__counterfactual_faces", "outcome", "score",
        )
    )
    rows = []
    for vispr_id, run_id, provider, model_name, prompt_version, strategy, counterfactual_faces, outcome, score in results:
        rows.append(
            {
                "id": vispr_id,
                "run_id": run_id,
                "provider": provider,
                "model_name": model_name,
                "prompt_version": prompt_version,
                "strategy": strategy,
                "counterfactual_faces": counterfactual_faces,
                "outcome": outcome,
                "predicted_score": score,
                "predicted_level": None if score is None else engine.level_of_score(score, bounds),
            }
        )
        entry = seen.setdefault(str(run_id), {
            "provider": provider, "model_name": model_name, "prompt_version": prompt_version, "strategy": strategy,
            "counterfactual_faces": counterfactual_faces, "rows": 0,
        })
        entry["rows"] += 1
    return rows


def _image_rows(chunk, exported: set[int]) -> list[dict]:
    """The stored bytes (cleaned and stripped of metadata when they entered) of the exported rows' images."""
    storage = Image._meta.get_field("file").storage
    rows = []
    for image_id, vispr_id, name in Image.objects.filter(id__in=chunk).exclude(file="").order_by("vispr_id").values_list("id", "vispr_id", "file"):
        if image_id not in exported:
            continue
        with storage.open(name, "rb") as fh:
            data = fh.read()
        # The stored name is a content hash; the exported one is the VISPR id.
        rows.append({"id": vispr_id, "image": {"bytes": data, "path": f"{vispr_id}{Path(name).suffix.lower()}"}})
    return rows


def dataset_card(profile: ScoringProfile, tax: taxonomy.Taxonomy, summary: dict, include_annotations: bool, include_images: bool = False) -> str:
    lines = ["---", "pretty_name: CPRT-Bench (CPRT Workbench export)", "configs:"]
    for config, (_, files_key) in CONFIGS.items():
        files = summary.get(files_key) or {}
        if files:
            lines += [f"- config_name: {config}", "  data_files:"]
            for split, path in files.items():
                lines += [f"  - split: {split}", f"    path: {path}"]
    lines += ["---", EXPORT_MARKER, "", "# CPRT-Bench export", ""]
    if profile.provisional:
        lines += [
            "> **Warning: provisional boundaries.** The scoring profile used for computed rows is provisional:",
            "> its level boundaries were not fitted to published CPRT-Bench scores (or the fit did not reproduce them).",
            "> Computed scores will change when the profile is fitted.",
            "",
        ]
    lines += [
        "One row per image: `id` (the VISPR file id), `binary_labels` (`level1`..`level4`, each a mapping of that",
        "level's attribute keys to 0/1), `level` (1 = most severe) and `score` in [0, 1].",
        "",
    ]
    if include_images:
        lines += [
            "> **This export contains images.** The configuration `images` holds the image bytes of the exported rows",
            "> (re-encoded, metadata removed). They may show people, documents and other personal data: keep the",
            "> dataset private and share it only under the terms of the original image collection (VISPR).",
        ]
    else:
        lines.append("**Images are not redistributed.** Ids resolve to VISPR files, e.g. `test2017/<id>.jpg`.")
    lines += [
        "",
        "## Scoring profile",
        "",
        f"- Profile: `{profile.name}` version {profile.version}{' (PROVISIONAL)' if profile.provisional else ''}",
        f"- Source: {profile.source}",
        f"- Weights: {list(profile.weights or engine.WEIGHTS)}",
        f"- Taxonomy version: {tax.version}",
    ]
    consensus = [
        public_annotator({"id": a.pk, "name": a.name, "kind": a.kind, "provider": a.provider, "model_name": a.model_name, "prompt_version": a.prompt_version})
        for a in profile.consensus_annotators.all()
    ]
    lines.append(f"- Consensus annotators: {', '.join(a['name'] for a in consensus) if consensus else '(none)'}")
    lines += ["", "| level | lo | hi |", "|---|---|---|"]
    bounds = profile.bounds
    for level in engine.LEVELS:
        lines.append(f"| {level} | {bounds.lo[level - 1]:.6f} | {bounds.hi[level - 1]:.6f} |")
    lines += [
        "",
        "Rows imported from CPRT-Bench keep their published `level` and `score` unchanged; other rows are computed",
        "with the profile above from the consensus of its annotators.",
        "",
        "## Counts",
        "",
        "| split | rows | published | computed | level 1 | level 2 | level 3 | level 4 | skipped (no score) | skipped (no labels) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for split, s in summary["splits"].items():
        lv = s["levels"]
        lines.append(
            f"| {split} | {s['rows']} | {s['published']} | {s['computed']} | {lv[1]} | {lv[2]} | {lv[3]} | {lv[4]} "
            f"| {s['skipped_no_score']} | {s['skipped_no_labels']} |"
        )
    empty = [split for split, s in summary["splits"].items() if s["rows"] == 0]
    if empty:
        lines += ["", f"Splits without rows are not part of the dataset: {', '.join(empty)}."]
    if include_annotations or include_images:
        columns = [("annotation_rows", "annotations"), ("prediction_rows", "predictions")] if include_annotations else []
        columns += [("image_rows", "images")] if include_images else []
        lines += ["", "| split | " + " | ".join(f"`{name}` rows" for _, name in columns) + " |", "|---|" + "---|" * len(columns)]
        for split, s in summary["splits"].items():
            lines.append(f"| {split} | " + " | ".join(str(s.get(key, 0)) for key, _ in columns) + " |")
    lines += _annotator_section(consensus, summary, include_annotations)
    if include_annotations:
        lines += [
            "",
            "## Configuration `annotations`",
            "",
            "One row per (image, annotator): the annotator (people under a pseudonym such as `human-7`), its kind,",
            "provider/model/prompt version for models, the raw labels (0, 0.5, 1; null where missing) and rationales.",
            "",
            "## Configuration `predictions`",
            "",
            "One row per (image, judge run): the run id, provider, model, prompt version, strategy, whether faces were",
            "assumed anonymised (`counterfactual_faces`), the outcome (`ok`, `unparseable`, `refused`, `error`) and the",
            "predicted score with its level under the profile above (null without a valid score).",
        ]
    if include_images:
        lines += [
            "",
            "## Configuration `images`",
            "",
            "One row per exported image that has stored bytes: `id` and `image` (an Image feature).",
        ]
    return "\n".join(lines) + "\n"


def _annotator_section(consensus: list[dict], summary: dict, include_annotations: bool) -> list[str]:
    """Who labelled: people only as pseudonyms (`human-<n>`), models by provider, model and prompt version."""

    def describe(a: dict) -> str:
        if a["kind"] == Annotator.KIND_MODEL:
            return f"model {a['provider']} / {a['model_name']}, prompt {a['prompt_version']}"
        return {Annotator.KIND_HUMAN: "person (pseudonym)", Annotator.KIND_GROUND_TRUTH: "imported CPRT-Bench ground truth"}.get(a["kind"], a["kind"])

    lines = ["", "## Annotators", "", "Consensus set of the profile (its annotators' labels make the computed rows):", ""]
    lines += [f"- `{a['name']}`: {describe(a)}" for a in consensus] or ["- (none)"]
    if include_annotations:
        lines += ["", "Annotators in the configuration `annotations`:", "", "| annotator | kind | images |", "|---|---|---|"]
        for name, a in sorted(summary["annotators"].items()):
            lines.append(f"| `{name}` | {describe(a)} | {a['rows']} |")
        if not summary["annotators"]:
            lines.append("| (none) | | |")
        lines += [
            "",
            "Judge runs in the configuration `predictions`:",
            "",
            "| run | provider | model | prompt version | strategy | counterfactual faces | predictions |",
            "|---|---|---|---|---|---|---|",
        ]
        for run_id, r in sorted(summary["prediction_runs"].items(), key=lambda item: int(item[0])):
            lines.append(
                f"| {run_id} | {r['provider']} | {r['model_name']} | {r['prompt_version']} | {r['strategy']} "
                f"| {'yes' if r['counterfactual_faces'] else 'no'} | {r['rows']} |"
            )
        if not summary["prediction_runs"]:
            lines.append("| (none) | | | | | | |")
    return lines


def push_dataset(out_dir: Path | str, repo_id: str, token: str, public: bool = False, endpoint: str | None = None) -> str:
    """Upload an export folder to the Hugging Face Hub as a dataset repository; returns its URL.

    `endpoint` (default: settings.HF_ENDPOINT, empty for huggingface.co) points at another Hub.
    """
    from django.conf import settings
    from huggingface_hub import HfApi

    if not token:
        raise ExportError("Set HF_TOKEN in the environment to push to the Hugging Face Hub.")
    endpoint = endpoint or settings.HF_ENDPOINT
    api = HfApi(token=token, endpoint=endpoint) if endpoint else HfApi(token=token)
    url = api.create_repo(repo_id=repo_id, repo_type="dataset", private=not public, exist_ok=True)
    api.upload_folder(folder_path=str(out_dir), repo_id=repo_id, repo_type="dataset", commit_message="CPRT Workbench export")
    return str(url)
