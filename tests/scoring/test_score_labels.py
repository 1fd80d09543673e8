"""score_labels: JSON Lines in, the same rows with engine level and score out; bad input refused."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from annotations import taxonomy
from scoring import engine
from scoring.models import ScoringProfile
from tests.support.bench_rows import make_rows
from tests.support.workers import ROOT, worker_env


def score(lines: list[str], *args) -> list[dict]:
    out = io.StringIO()
    call_command("score_labels", *args, stdin=io.StringIO("".join(line + "\n" for line in lines)), stdout=out, stderr=io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()]


def expected(row, bounds, weights=engine.WEIGHTS):
    flat = {k: v for group in row["binary_labels"].values() for k, v in group.items()}
    return engine.severity(engine.level_counts(flat, taxonomy.from_file().level_of), bounds, weights)


@pytest.mark.django_db
def test_rows_come_back_with_engine_level_and_score_and_other_fields_untouched():
    rows = make_rows(50, seed=4)
    for r in rows:
        r["note"] = "kept é"
        r["level"], r["score"] = 99, -1  # overwritten
    bounds = engine.Bounds.from_inner(0.8, 0.5, 0.2)
    result = score([json.dumps(r) for r in rows], "--bounds", "0.8,0.5,0.2")
    assert len(result) == 50
    for original, scored in zip(rows, result):
        assert scored["id"] == original["id"] and scored["note"] == "kept é"
        assert scored["binary_labels"] == original["binary_labels"]
        assert (scored["level"], scored["score"]) == expected(original, bounds)
        assert list(scored) == list(original)  # field order kept


@pytest.mark.django_db
def test_profile_option_and_default_active_profile():
    ScoringProfile.objects.create(name="fitted", lo1=0.9, lo2=0.6, lo3=0.3, provisional=False, source="test", weights=[330, 30, 5, 1])
    rows = make_rows(10)
    by_profile = score([json.dumps(r) for r in rows], "--profile", "fitted")
    by_default = score([json.dumps(r) for r in rows])
    for row, a, b in zip(rows, by_profile, by_default):
        assert (a["level"], a["score"]) == expected(row, engine.Bounds.from_inner(0.9, 0.6, 0.3), engine.TIGHT)
        assert (b["level"], b["score"]) == expected(row, ScoringProfile.active().bounds, ScoringProfile.active().weights)


@pytest.mark.django_db
def test_row_without_id_or_published_values_is_fine_and_empty_image_is_level_4():
    row = make_rows(1)[0]
    row["binary_labels"] = {lv: {k: 0 for k in g} for lv, g in row["binary_labels"].items()}
    (scored,) = score([json.dumps({"binary_labels": row["binary_labels"]})], "--bounds", "0.75,0.5,0.25")
    assert (scored["level"], scored["score"]) == (4, 0.0)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bounds,message",
    [
        ("0.5,0.75,0.25", "must satisfy"),
        ("0.75,0.5", "three finite numbers"),
        ("a,b,c", "three numbers"),
        ("nan,0.5,0.2", "three finite numbers"),
        ("0.75,0.5,0", "must satisfy"),
        ("1,0.5,0.2", "must satisfy"),
    ],
)
def test_bad_bounds_are_refused(bounds, message):
    with pytest.raises(CommandError, match=message):
        score([json.dumps(make_rows(1)[0])], "--bounds", bounds)


@pytest.mark.django_db
def test_unknown_profile_is_refused():
    with pytest.raises(CommandError, match="No scoring profile named 'nope'"):
        score([json.dumps(make_rows(1)[0])], "--profile", "nope")


@pytest.mark.django_db
def test_bad_rows_name_their_line_and_nothing_is_written():
    rows = [json.dumps(r) for r in make_rows(5)]
    bad = make_rows(1)[0]
    bad["binary_labels"]["level2"]["beliefs"] = 0.5
    rows.insert(2, json.dumps(bad))
    rows.insert(4, "{not json")
    out = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("score_labels", "--bounds", "0.75,0.5,0.25", stdin=io.StringIO("\n".join(rows) + "\n"), stdout=out)
    assert "line 3: binary_labels.level2.beliefs = 0.5" in str(exc.value)
    assert "line 5: malformed JSON" in str(exc.value)
    assert out.getvalue() == ""


@pytest.mark.django_db
def test_command_line_exit_status_and_stderr():
    # The child process reads only committed data: the taxonomy, loaded by the migrations.
    good = json.dumps(make_rows(1)[0]) + "\n"
    cmd = [sys.executable, "manage.py", "score_labels", "--bounds", "0.75,0.5,0.25"]
    ok = subprocess.run(cmd, input=good.encode(), capture_output=True, cwd=ROOT, env=worker_env(), timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["level"] in (1, 2, 3, 4)
    bad = subprocess.run(cmd, input=good.encode() + b'{"binary_labels": 3}\n', capture_output=True, cwd=ROOT, env=worker_env(), timeout=120)
    assert bad.returncode != 0
    assert b"line 2: binary_labels must be an object" in bad.stderr
    assert bad.stdout == b""
