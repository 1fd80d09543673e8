"""score_labels --weights beside --bounds, and the A.6 check it prints."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotations import taxonomy
from scoring import engine
from tests.support.bench_rows import make_rows


def run(rows, *args) -> tuple[list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("score_labels", *args, stdin=io.StringIO("".join(json.dumps(r) + "\n" for r in rows)), stdout=out, stderr=err)
    return [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def expected(row, bounds, weights):
    flat = {k: v for group in row["binary_labels"].values() for k, v in group.items()}
    return engine.severity(engine.level_counts(flat, taxonomy.from_file().level_of), bounds, weights)


@pytest.mark.django_db
@pytest.mark.parametrize("weights_arg,weights", [("330,30,5,1", engine.TIGHT), ("tight", engine.TIGHT),
                                                 ("658503,7569,87,1", engine.EXPONENTIAL_87)])
def test_weights_and_bounds_together(weights_arg, weights):
    rows = make_rows(30, seed=9)
    bounds = engine.Bounds.from_inner(0.8, 0.5, 0.2)
    scored, err = run(rows, "--bounds", "0.8,0.5,0.2", "--weights", weights_arg)
    for row, out in zip(rows, scored):
        assert (out["level"], out["score"]) == expected(row, bounds, weights)
    assert "A.6 check: (2, 0, 0, 0)" in err and "(paper 0.947)" in err


@pytest.mark.django_db
def test_default_profile_is_exponential_87_and_reproduces_a6():
    rows = make_rows(10, seed=2)
    scored, err = run(rows)
    for row, out in zip(rows, scored):
        assert (out["level"], out["score"]) == expected(row, engine.PROVISIONAL, engine.EXPONENTIAL_87)
    assert "-> 0.94703 (paper 0.947)" in err and "-> 0.87001 (paper 0.870)" in err


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["330,30,5", "330,30,5,2", "329,30,5,1", "a,b,c,d", "330,30,5.5,1", "nan,1,1,1", "linear"])
def test_bad_weights_are_refused(bad):
    with pytest.raises(CommandError, match="--weights"):
        run(make_rows(1), "--weights", bad)
