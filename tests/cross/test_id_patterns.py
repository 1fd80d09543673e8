"""Ids end where the text ends, and import_vispr reads regular files only.

`$` also matches before a trailing newline, so every id pattern is anchored with `\\Z` (or used with
fullmatch). A FIFO named like an image would block a plain read forever: it is skipped.
"""
from __future__ import annotations

import ast
import io
import os
import signal
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from annotations import taxonomy
from annotations.models import Image
from annotations.models import ID_PATTERN
from scoring.cprt_bench.reading import parse_row
from scoring.models import ExportJob
from tests.conftest import png_bytes

ROOT = Path(__file__).resolve().parents[2]
# Anchored patterns where "$" is meant: a Markdown code fence around a multi-line model reply.
DOLLAR_ALLOWED = {r"^```(?:json)?\s*\n(.*)\n```$"}


def anchored_patterns() -> list[tuple[str, str]]:
    """(file, pattern) of every string literal in re.compile(...) / RegexValidator(...) / *_PATTERN = ... of the project."""
    found = []
    for folder in ("annotations", "inference", "scoring", "cprt_site", "core", "demo"):
        for path in (ROOT / folder).rglob("*.py") if (ROOT / folder).is_dir() else ():
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                values = []
                called = getattr(node.func, "attr", getattr(node.func, "id", "")) if isinstance(node, ast.Call) else ""
                if called in ("compile", "RegexValidator", "match", "fullmatch", "search"):
                    values = node.args[:1]
                elif isinstance(node, ast.Assign) and any(getattr(t, "id", "").endswith("PATTERN") for t in node.targets):
                    values = [node.value]
                for value in values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith("^"):
                        found.append((str(path.relative_to(ROOT)), value.value))
    return found


def test_no_anchored_pattern_ends_with_a_dollar():
    patterns = anchored_patterns()
    assert any("ID_PATTERN" in open(ROOT / f).read() for f, _ in patterns), "the scan must see the id patterns"
    offenders = [(f, p) for f, p in patterns if p.endswith("$") and p not in DOLLAR_ALLOWED]
    assert not offenders, offenders


@pytest.mark.parametrize("value", ["2017_10000580\n", "2017_10000580\n\n", "\n"])
def test_vispr_id_pattern_refuses_a_trailing_newline(value):
    assert ID_PATTERN.match("2017_10000580")
    assert not ID_PATTERN.match(value)


@pytest.mark.django_db
def test_import_cprt_row_with_a_trailing_newline_in_its_id_is_refused():
    tax = taxonomy.active()
    row = {"id": "2017_10000580\n", "level": 4, "score": 0.0}
    _, problems = parse_row(row, tax)
    assert any("is not a VISPR id" in p for p in problems), problems


@pytest.mark.django_db
def test_export_repo_id_with_a_trailing_newline_is_refused():
    field = ExportJob._meta.get_field("repo_id")
    field.run_validators("org/name")
    with pytest.raises(ValidationError):
        field.run_validators("org/name\n")


def test_model_name_with_a_trailing_newline_is_refused():
    from inference.forms import LaunchForm

    validators = LaunchForm.base_fields["model_name"].validators
    for validator in validators:
        validator("gpt-5.1")
    with pytest.raises(ValidationError):
        for validator in validators:
            validator("gpt-5.1\n")


def import_vispr(folder: Path, timeout_s: int = 20) -> str:
    """Run import_vispr in this thread, interrupted by SIGALRM if it blocks (the old code hung on a FIFO)."""

    def blocked(*_):
        raise TimeoutError(f"import_vispr still running after {timeout_s} s (blocked reading a FIFO?)")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(timeout_s)
    try:
        out = io.StringIO()
        call_command("import_vispr", str(folder), "--split", "test", stdout=out)
        return out.getvalue()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.django_db
def test_a_fifo_named_like_an_image_is_skipped_not_read(tmp_path):
    folder = tmp_path / "vispr"
    folder.mkdir()
    (folder / "2017_10000580.png").write_bytes(png_bytes())
    os.mkfifo(folder / "2017_10000581.jpg")
    out = import_vispr(folder)
    line = next(line for line in out.splitlines() if line.startswith("  skipped 2017_10000581.jpg:"))
    assert "not a regular file" in line
    assert list(Image.objects.values_list("vispr_id", flat=True)) == ["2017_10000580"]


@pytest.mark.django_db
def test_a_file_name_with_a_newline_before_the_suffix_is_not_an_id(tmp_path):
    folder = tmp_path / "vispr"
    folder.mkdir()
    (folder / "2017_10000580.png").write_bytes(png_bytes())
    (folder / "2017_10000582\n.png").write_bytes(png_bytes(color=(1, 2, 3)))
    out = import_vispr(folder)
    assert "is not a VISPR id" in out
    assert list(Image.objects.values_list("vispr_id", flat=True)) == ["2017_10000580"]
