"""SPY-Bench files nested 100,000 deep (200 KB): spy_import (benchmark, label2text, --results) refuses
them with one line naming the file; nothing is written."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

DEEP = b"[" * 100_000 + b"]" * 100_000
TOO_DEEP = "nested too deeply (more than 100 levels"

pytestmark = pytest.mark.django_db


def refusal(*args) -> str:
    with pytest.raises(CommandError) as exc:
        call_command("spy_import", *map(str, args))
    text = str(exc.value)
    assert TOO_DEEP in text and len(text.splitlines()) == 1 and "RecursionError" not in text, text[:300]
    return text


def test_spy_import_refuses_a_deep_benchmark_or_label2text_file(spy_files, tmp_path):
    from benchmarks.spy_bench.models import SpySet

    deep = tmp_path / "deep.json"
    deep.write_bytes(DEEP)
    assert "deep" in refusal(deep, "--label2text", spy_files[1], "--name", "d1")
    assert "deep" in refusal(spy_files[0], "--label2text", deep, "--name", "d2")
    assert not SpySet.objects.exists()


def test_spy_import_results_refuses_a_deep_row(spy_set, tmp_path):
    from benchmarks.spy_bench.models import SpyImport

    path = tmp_path / "theirs.jsonl"
    row = {"benchmark_id": 1, "label": "a4_gender", "is_privacy": 1, "eval_resp": "reject"}
    path.write_bytes(json.dumps(row).encode() + b"\n" + DEEP + b"\n")
    assert "line 2" in refusal(path, "--results", "--name", "paper", "--model", "qwen", "--set", "tiny")
    assert not SpyImport.objects.exists()
