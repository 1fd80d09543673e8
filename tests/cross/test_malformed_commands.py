"""Malformed input to the management commands: every command of our apps is classified (COMMANDS); those
that read input get bad input and must refuse it clearly (HTTP input: test_malformed_api.py).

import_vispr (a plain folder here; a release folder: tests/annotations/test_import_vispr_release.py),
import_cprt (.json, .jsonl, .parquet), score_labels (stdin), create_reviewer -> CommandError naming the file
and row (or the argument). Every refusal leaves the stored data as it was
(`tests.support.stored.stored_data`, with the stored image files for imports). The per-field
messages of ordinary bad input are tested beside each feature (test_import_cprt.py,
test_import_vispr.py); this file sweeps what those do not.
"""
from __future__ import annotations

import io
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command, get_commands
from PIL import Image as PILImage

from tests.conftest import png_bytes
from tests.support.bench_rows import make_rows

from tests.support.stored import changed, stored_data


COMMANDS = {
    "import_vispr": "a folder of images",
    "vispr_labels": None,  # its input is the mapping file: bad files refused in tests/annotations/test_vispr_annotator.py
    "import_cprt": "a .json, .jsonl or .parquet file",
    "score_labels": "JSON Lines on stdin",
    "create_reviewer": "a user name and an e-mail address",
    "export_hf": None,  # writes files; its arguments are choices and a profile name (test_export_hf.py)
    "export_sft": None,  # writes files; every bad option is refused in tests/scoring/test_sft_export.py
    "seed_demo": None,  # no input
    "run_demo": None,  # a port number (test_demo.py)
    "anonymize_faces": None,  # its arguments are a choice and numbers (tests/annotations/test_faces_jobs.py)
    "batch_export": None,  # a run id and an output path (tests/inference/test_batch_offline.py)
    "batch_ingest": None,  # a run_batch output file: malformed lines in tests/inference/test_batch_offline.py
    "retry_failed": None,  # a run id (tests/inference/test_retry_failed.py)
    "register_classifier": None,  # an ONNX file: not ONNX, truncated, other shapes, duplicate name (tests/inference/test_classifiers.py)
    "launch_run": None,  # its options are the launch form's fields, refused with its messages (tests/inference/test_launch_run.py)
    "build_dataset": "a recipe: a preset name or a JSON file",
    "import_multipriv": None,  # a release folder: malformed profiles, images, links, slots refused in tests/multipriv/test_import.py
    "spy_expand": "a SPY-Bench benchmark file and label2text.json",  # bad files: tests/inference/spy/test_spy_expand.py
    "spy_metrics": "an evaluated SPY-Bench JSONL file",  # bad rows: tests/inference/spy/test_spy_metrics.py
    "spy_import": "a benchmark file and label2text.json, or evaluated rows",  # tests/inference/spy/test_spy_runs.py
}


def test_every_command_is_classified():
    ours = {name for name, app in get_commands().items()
            if app in ("core", "annotations", "inference", "scoring", "demo") or app.startswith("benchmarks.")}
    assert ours == set(COMMANDS)


# --- import_vispr ---------------------------------------------------------------------------------


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_declaring(width: int, height: int, extra_chunks: bytes = b"") -> bytes:
    """A PNG whose header declares width x height one-bit pixels, with at most 64 rows of data: tiny on disk."""
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    rows = (b"\x00" * (1 + (width + 7) // 8)) * min(height, 64)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + extra_chunks
            + png_chunk(b"IDAT", zlib.compress(rows, 9)) + png_chunk(b"IEND", b""))


def jpeg_bytes(exif: bytes | None = None) -> bytes:
    buf = io.BytesIO()
    kwargs = {"exif": exif} if exif is not None else {}
    PILImage.new("RGB", (40, 30), (30, 60, 90)).save(buf, format="JPEG", **kwargs)
    return buf.getvalue()


def other_format(fmt: str) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (20, 20), (1, 2, 3)).save(buf, format=fmt)
    return buf.getvalue()


# (file name, bytes, what the refusal must say about it)
BAD_IMAGES = [
    ("2017_90000001.png", png_declaring(50_000, 50_000), "decompression bomb"),
    ("2017_90000002.png", png_declaring(7_000, 7_000), "over the 40,000,000-pixel limit"),
    ("2017_90000003.png", png_declaring(64, 64, png_chunk(b"zTXt", b"k\x00\x00" + zlib.compress(b"\x00" * 20_000_000, 9))), "unreadable"),
    ("2017_90000004.jpg", b"this is not a picture", "not an image Pillow can read"),
    ("2017_90000005.png", bytes(range(256)) * 40, "not an image Pillow can read"),
    ("2017_90000006.jpg", b"<!doctype html><html><body>hello</body></html>", "not an image Pillow can read"),
    ("2017_90000007.jpg", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "not an image Pillow can read"),
    ("2017_90000008.png", other_format("GIF"), "not an image Pillow can read (JPEG or PNG expected)"),
    ("2017_90000009.jpg", other_format("TIFF"), "not an image Pillow can read (JPEG or PNG expected)"),
    ("2017_90000010.jpg", b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n", "not an image Pillow can read (JPEG or PNG expected)"),
    ("2017_90000011.jpg", jpeg_bytes()[:200], "unreadable or truncated image"),
    ("2017_90000012.png", png_bytes()[:60], "unreadable or truncated image"),
    ("2017_90000013.jpg", b"", "empty file"),
    ("2017_90000014.jpg", b"\xff\xd8\xff" + b"\x00" * 64, "not an image Pillow can read"),
    ("2017_90000015.jpg", jpeg_bytes(exif=b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\xff\xff" + b"\x00" * 20), None),  # garbage EXIF
    ("2017_90000016.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "not an image Pillow can read"),
    ("2017_90000017.jpg", b"\x00" * 300_000, "over the 200,000-byte limit"),
]


def run_import_vispr(folder: Path) -> str:
    out = io.StringIO()
    call_command("import_vispr", str(folder), "--split", "test", stdout=out)
    return out.getvalue()


@pytest.fixture
def image_limits(settings):
    settings.CPRT_MAX_IMAGE_PIXELS = 40_000_000
    settings.CPRT_MAX_IMAGE_BYTES = 200_000


@pytest.mark.django_db
@pytest.mark.filterwarnings("ignore:Corrupt EXIF data")
@pytest.mark.parametrize("name, content, reason", BAD_IMAGES, ids=[b[0] for b in BAD_IMAGES])
def test_import_vispr_refuses_the_whole_folder_for_one_bad_image(tmp_path, image_limits, name, content, reason):
    folder = tmp_path / "test2017"
    folder.mkdir()
    (folder / "2017_10000001.png").write_bytes(png_bytes(color=(1, 99, 3)))  # a good one, which must not be imported either
    (folder / name).write_bytes(content)
    before = stored_data(with_files=True)
    try:
        out = run_import_vispr(folder)
    except CommandError as exc:
        message = str(exc)
    else:
        # Garbage EXIF in an otherwise good JPEG is dropped with all metadata: importing it is right.
        assert reason is None, f"{name} was imported: {out}"
        return
    assert reason is not None, f"{name} was refused: {message}"
    assert "nothing was written" in message and str(folder) in message
    line = next(line for line in message.splitlines() if name in line)
    assert reason in line, line
    assert "2017_10000001.png" not in message
    assert changed(before, stored_data(with_files=True)) == []


@pytest.mark.django_db
def test_import_vispr_lists_every_bad_file_at_once(tmp_path, image_limits):
    folder = tmp_path / "all"
    folder.mkdir()
    for name, content, reason in BAD_IMAGES:
        if reason is not None:
            (folder / name).write_bytes(content)
    before = stored_data(with_files=True)
    with pytest.raises(CommandError) as exc:
        run_import_vispr(folder)
    bad = [name for name, _, reason in BAD_IMAGES if reason is not None]
    assert f"{len(bad)} file(s) cannot be imported" in str(exc.value)
    assert all(name in str(exc.value) for name in bad)
    assert changed(before, stored_data(with_files=True)) == []


@pytest.mark.django_db
def test_import_vispr_names_that_are_not_utf8_are_shown_escaped(tmp_path, image_limits):
    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "2017_10000002.png").write_bytes(png_bytes(color=(5, 5, 5)))
    Path(os.fsdecode(bytes(folder) + b"/caf\xe9.jpg")).write_bytes(png_bytes(color=(6, 6, 6)))
    out = run_import_vispr(folder)
    assert "Images added: 1;" in out and "skipped caf\\xe9.jpg: file name is not a VISPR id" in out
    from core.models import AuditEvent

    assert AuditEvent.objects.get(action="import_vispr").data["skipped_files"] == [
        {"file": "caf\\xe9.jpg", "reason": "file name is not a VISPR id (letters, digits, '_', '.', '-')"}]


# --- import_cprt ----------------------------------------------------------------------------------


def jsonl(rows, mutate=None) -> bytes:
    lines = [json.dumps(r).encode() for r in rows]
    if mutate:
        lines = mutate(lines)
    return b"\n".join(lines) + b"\n"


def row_change(index: int, change: Callable[[dict], None]) -> Callable[[list[bytes]], list[bytes]]:
    def mutate(lines):
        row = json.loads(lines[index])
        change(row)
        lines[index] = json.dumps(row).encode()
        return lines
    return mutate


def raw_line(index: int, raw: bytes) -> Callable[[list[bytes]], list[bytes]]:
    def mutate(lines):
        lines[index] = raw
        return lines
    return mutate


def _set(key, value):
    return lambda row: row.update({key: value})


def _set_level(level: str, attribute: str, value):
    return lambda row: row["binary_labels"][level].update({attribute: value})


ROWS = make_rows(5, seed=7)
# (label, file name, bytes, what the refusal must say)
BAD_BENCH_FILES = [
    ("jsonl truncated", "b.jsonl", jsonl(ROWS)[:-40], "line 5: malformed JSON"),
    ("jsonl a row is a list", "b.jsonl", jsonl(ROWS, raw_line(0, b"[1, 2, 3]")), "line 1: a row must be a JSON object"),
    ("jsonl a row is null", "b.jsonl", jsonl(ROWS, raw_line(0, b"null")), "line 1: a row must be a JSON object"),
    ("jsonl labels are a list", "b.jsonl", jsonl(ROWS, row_change(1, _set("binary_labels", [0, 1]))), "line 2: binary_labels must be an object"),
    ("jsonl labels are 100,000 zeros", "b.jsonl", jsonl(ROWS, row_change(1, _set("binary_labels", [0] * 100_000))),
     "line 2: binary_labels must be an object"),
    ("jsonl a level group is a list", "b.jsonl", jsonl(ROWS, row_change(1, lambda r: r["binary_labels"].update(level2=[0]))),
     "line 2: binary_labels.level2 must be an object"),
    ("jsonl level a string", "b.jsonl", jsonl(ROWS, row_change(1, _set("level", "2"))), 'line 2: level "2" is not an integer'),
    ("jsonl level 10**30", "b.jsonl", jsonl(ROWS, row_change(1, _set("level", 10**30))),
     "line 2: level 1000000000000000000000000000000 is not an integer"),
    ("jsonl level of 5000 digits", "b.jsonl", jsonl(ROWS, raw_line(1, b'{"id": "2017_x", "level": ' + b"9" * 5000 + b"}")),
     "line 2: malformed JSON: Exceeds the limit"),
    ("jsonl score 1e308", "b.jsonl", jsonl(ROWS, row_change(1, _set("score", 1e308))), "line 2: score 1e+308 is outside [0, 1]"),
    ("jsonl score 1e400", "b.jsonl", jsonl(ROWS, raw_line(1, jsonl(ROWS[1:2]).strip()[:-1] + b', "score": 1e400}')),
     "line 2: score Infinity is not a number"),
    ("jsonl score a list", "b.jsonl", jsonl(ROWS, row_change(1, _set("score", [0.5]))), "line 2: score [0.5] is not a number"),
    ("jsonl label a string", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level1", "biometrics", "1"))), 'binary_labels.level1.biometrics = "1"'),
    ("jsonl label 10**30", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level1", "biometrics", 10**30))),
     "binary_labels.level1.biometrics = 1000000000000000000000000000000"),
    ("jsonl id a number", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", 123))), "line 2: id 123 is not a VISPR id"),
    ("jsonl id an object", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", {"a": 1}))), 'line 2: id {"a": 1} is not a VISPR id'),
    ("jsonl id of 2 MB", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", "x" * 2_000_000))), 'line 2: id "xxxx'),
    ("jsonl an unknown attribute", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level4", "colour", 1))), "line 2: unknown attribute 'colour'"),
    ("jsonl a 2 MB unknown attribute", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level4", "k" * 2_000_000, 1))),
     "line 2: unknown attribute 'kkkk"),
    ("jsonl an unknown level", "b.jsonl", jsonl(ROWS, row_change(1, lambda r: r["binary_labels"].update(level9={}))),
     "line 2: unknown level 'level9'"),
    ("jsonl non-UTF-8", "b.jsonl", jsonl(ROWS, raw_line(2, b'{"id": "caf\xe9"}')), "line 3: not UTF-8"),
    ("jsonl UTF-16", "b.jsonl", "\n".join(json.dumps(r) for r in ROWS).encode("utf-16"), "line 1: not UTF-8"),
    ("jsonl nested 100,000 deep", "b.jsonl", jsonl(ROWS, raw_line(1, b"[" * 100_000 + b"]" * 100_000)), "line 2: malformed JSON: nested too deeply"),
    ("jsonl an escaped lone surrogate id", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", "\ud800"))), 'line 2: id "\\ud800" is not a VISPR id'),
    ("jsonl empty", "b.jsonl", b"", "no rows"),
    ("jsonl blank lines only", "b.jsonl", b"\n \n\t\n", "no rows"),
    ("jsonl a PNG", "b.jsonl", png_bytes(), "not UTF-8"),
    ("json truncated", "b.json", json.dumps(ROWS).encode()[:-10], "malformed JSON"),
    ("json an object, not a list", "b.json", json.dumps(ROWS[0]).encode(), "must hold a JSON list"),
    ("json a list of numbers", "b.json", b"[1, 2]", "row 1: a row must be a JSON object"),
    ("json non-UTF-8", "b.json", json.dumps(ROWS).encode()[:-1] + b', "\xff"]', "not UTF-8"),
    ("json nested 100,000 deep", "b.json", b"[" * 100_000 + b"]" * 100_000, "malformed JSON: nested too deeply"),
    ("json a 5000-digit number", "b.json", b"[" + b"9" * 5000 + b"]", "malformed JSON: Exceeds the limit"),
    ("json empty", "b.json", b"", "malformed JSON"),
    ("json NaN score", "b.json", json.dumps([{**ROWS[0], "score": float("nan")}]).encode(), "row 1: score NaN is not a number"),
    ("json a PNG", "b.json", png_bytes(), "not UTF-8"),
    ("parquet garbage", "b.parquet", b"PAR1" + bytes(range(256)) + b"PAR1", "not a readable parquet file"),
    ("parquet empty", "b.parquet", b"", "not a readable parquet file"),
    ("parquet a PNG", "b.parquet", png_bytes(), "not a readable parquet file"),
]


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _parquet_cases() -> list:
    good = pa.Table.from_pylist(ROWS)
    def column(name, array):
        return good.set_column(good.schema.get_field_index(name), name, array)
    n = len(ROWS)
    return [
        ("parquet truncated", "b.parquet", parquet_bytes(good)[: len(parquet_bytes(good)) // 2], "not a readable parquet file"),
        ("parquet level as text", "b.parquet", parquet_bytes(column("level", pa.array([str(r["level"]) for r in ROWS]))), 'row 1: level "'),
        ("parquet id as bytes", "b.parquet", parquet_bytes(column("id", pa.array([r["id"].encode() for r in ROWS], pa.binary()))),
         "row 1: id b'2017_"),
        ("parquet score as a decimal", "b.parquet", parquet_bytes(column("score", pa.array([0] * n, pa.decimal128(5, 2)))),
         "row 1: score Decimal('0.00') is not a number"),
        ("parquet level as a date", "b.parquet", parquet_bytes(column("level", pa.array([0] * n, pa.date32()))),
         "row 1: level datetime.date(1970, 1, 1)"),
        ("parquet score 1e308", "b.parquet", parquet_bytes(column("score", pa.array([1e308] * n))), "row 1: score 1e+308 is outside [0, 1]"),
        ("parquet without the score", "b.parquet", parquet_bytes(good.drop_columns(["score"])), "row 1: missing score"),
        ("parquet labels as a map", "b.parquet",
         parquet_bytes(column("binary_labels", pa.array([[("level1", 1)]] * n, pa.map_(pa.string(), pa.int64())))),
         "row 1: binary_labels must be an object"),
    ]


BAD_BENCH_FILES += _parquet_cases()


def bench_before(tmp_path) -> None:
    """Something stored already, so that 'unchanged' means more than 'still empty'."""
    path = tmp_path / "earlier.jsonl"
    path.write_bytes(jsonl(make_rows(30, seed=3)))
    call_command("import_cprt", str(path), "--split", "test", "--profile", "earlier", stdout=io.StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize("label, name, content, message", BAD_BENCH_FILES, ids=[b[0] for b in BAD_BENCH_FILES])
def test_import_cprt_refuses_the_whole_file(tmp_path, label, name, content, message):
    bench_before(tmp_path)
    path = tmp_path / name
    path.write_bytes(content)
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("import_cprt", str(path), "--split", "test", stdout=io.StringIO())
    text = str(exc.value)
    assert str(path) in text and "nothing was written" in text, text[:500]
    assert message in text, text[:2000]
    assert len(text) < 5_000, "a huge value must not make a huge message"
    assert changed(before, stored_data()) == []


# --- score_labels ---------------------------------------------------------------------------------

ONE_ROW = jsonl(ROWS[:1]).strip()
BAD_STDIN = [
    ("truncated", ONE_ROW + b"\n" + ONE_ROW[:-20], "line 2: malformed JSON"),
    ("non-UTF-8", ONE_ROW + b"\n" + b'{"id": "caf\xe9"}', "line 2: not UTF-8"),
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "line 1: malformed JSON: nested too deeply"),
    ("a 5000-digit number", ONE_ROW[:-1] + b', "n": ' + b"9" * 5000 + b"}", "line 1: malformed JSON: Exceeds the limit"),
    ("NaN in a passed-through field", ONE_ROW[:-1] + b', "n": NaN}', "line 1: malformed JSON: NaN is not a number JSON allows"),
    ("1e400 in a passed-through field", ONE_ROW[:-1] + b', "n": 1e400}', "line 1: malformed JSON: the number 1e400 is out of range"),
    ("a lone surrogate in a passed-through field", ONE_ROW[:-1] + b', "n": "\\udc80"}', "line 1: a string holds an escaped lone surrogate"),
    ("a row that is a list", b"[1, 2]", "line 1: a row must be a JSON object"),
    ("labels that are a string", json.dumps({"binary_labels": "x" * 1000}).encode(), "line 1: binary_labels must be an object"),
    ("an unknown attribute", json.dumps({"binary_labels": {**ROWS[0]["binary_labels"], "level4": {"colour": 1}}}).encode(),
     "unknown attribute 'colour'"),
    ("a label of 10**30",
     json.dumps({"binary_labels": {**ROWS[0]["binary_labels"], "level1": {**ROWS[0]["binary_labels"]["level1"], "biometrics": 10**30}}}).encode(),
     "biometrics = 1000000000000000000000000000000"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("label, raw, message", BAD_STDIN, ids=[b[0] for b in BAD_STDIN])
def test_score_labels_refuses_bad_lines_and_writes_nothing(label, raw, message):
    out = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("score_labels", "--bounds", "0.8,0.5,0.2", stdin=io.BytesIO(raw + b"\n"), stdout=out, stderr=io.StringIO())
    assert message in str(exc.value), str(exc.value)[:1000]
    assert out.getvalue() == ""


# --- create_reviewer ------------------------------------------------------------------------------

BAD_ACCOUNTS = [
    (("x" * 10_000, "--role", "reviewer"), "Invalid user name 'xxxx"),
    (("bad\x00name", "--role", "reviewer"), "Invalid user name"),
    (("bad\udcffname", "--role", "reviewer"), "Invalid user name"),
    (("   ", "--role", "reviewer"), "must not be empty"),
    (("carol", "--role", "reviewer", "--email", "a" * 250 + "@example.org"), "Invalid e-mail address"),
    (("carol", "--role", "reviewer", "--email", "x" * 10_000), "Invalid e-mail address 'xxxx"),
    (("carol", "--role", "reviewer", "--email", "carol\x00@example.org"), "Invalid e-mail address"),
    (("carol", "--role", "superuser"), "invalid choice"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("args, message", BAD_ACCOUNTS, ids=range(len(BAD_ACCOUNTS)))
def test_create_reviewer_refuses_bad_arguments(args, message):
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("create_reviewer", *args, stdout=io.StringIO())
    assert message in str(exc.value) and len(str(exc.value)) < 1000, str(exc.value)[:300]
    assert changed(before, stored_data()) == []


# =================================================================================================
# Browser forms (their ordinary bad input is tested per view; here, bytes that are not a form at all)



# --- build_dataset --------------------------------------------------------------------------------

BAD_RECIPES = [
    ("binary.json", b"\xff\xfe\x00garbage", "not UTF-8 text"),
    ("huge.json", b'{"description": "' + b"x" * 300_000 + b'"}', "larger than 256 KiB"),
    ("empty.json", b"", "not valid JSON"),
    ("nan.json", b'{"vispr_splits": ["test2017"], "seed": NaN, "rules": [{"name": "r", "any": ["a0_safe"]}]}',
     "seed: Input should be a valid integer"),
    ("float.json", b'{"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "quota": 2.5}]}',
     "quota: Input should be a valid integer"),
    ("bool.json", b'{"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "only": "yes"}]}',
     "only: Input should be a valid boolean"),
    ("nested.json", b'{"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": [["a0_safe"]]}]}', r"any\[0\]: Input should be a valid string"),
    ("rule-name.json", b'{"vispr_splits": ["test2017"], "rules": [{"name": "../../etc", "any": ["a0_safe"]}]}', "is not a name"),
    ("newline-id.json", b'{"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe\\n"]}]}', "is not a VISPR attribute id"),
    ("rules-object.json", b'{"vispr_splits": ["test2017"], "rules": {"name": "r"}}', "rules: Input should be a valid list"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("name, content, message", BAD_RECIPES, ids=[b[0] for b in BAD_RECIPES])
def test_build_dataset_refuses_a_bad_recipe_file_and_changes_nothing(tmp_path, name, content, message):
    from annotations.models import Image

    Image.objects.create(vispr_id="2017_recipe", split="test", vispr_split="test2017", vispr_labels=["a0_safe"])
    path = tmp_path / name
    path.write_bytes(content)
    before = stored_data()
    with pytest.raises(CommandError, match=message):
        call_command("build_dataset", "--recipe", str(path), "--name", "v", stdout=io.StringIO(), stderr=io.StringIO())
    assert changed(before, stored_data()) == []
