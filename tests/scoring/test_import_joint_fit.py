"""import_cprt fits weights and boundaries jointly and activates a file printed with 3 decimals."""
from __future__ import annotations

import io
import json
import random

import pytest
from django.core.management import call_command

from annotations import taxonomy
from scoring import engine
from scoring.models import ScoringProfile

BOUNDS = engine.Bounds((0.8305, 0.56, 0.29, 0.0))


def rows_with(weights, decimals: int, n: int = 600, seed: int = 5) -> list[dict]:
    tax = taxonomy.from_file()
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        p = rng.choice([0.03, 0.1, 0.25, 0.5])
        flat = {key: int(rng.random() < p) for key in tax.keys}
        level, score = engine.severity(engine.level_counts(flat, tax.level_of), BOUNDS, weights)
        rows.append({"id": f"2017_{20000000 + i}", "level": level, "score": round(score, decimals),
                     "binary_labels": {f"level{lv}": {k: flat[k] for k in tax.keys_of_level(lv)} for lv in engine.LEVELS}})
    return rows


@pytest.mark.django_db
@pytest.mark.parametrize("weight_set", ["tight", "exponential-87"])
def test_three_decimal_file_fits_weights_and_activates(tmp_path, weight_set):
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows_with(engine.WEIGHT_SETS[weight_set], 3)), encoding="utf-8")
    out = io.StringIO()
    call_command("import_cprt", str(path), "--split", "test", stdout=out)
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.is_active and not profile.provisional, out.getvalue()
    assert profile.weights == list(engine.WEIGHT_SETS[weight_set])
    assert (profile.lo1, profile.lo2, profile.lo3) == pytest.approx(BOUNDS.lo[:3], abs=1.5e-3)
    report = profile.fit_report
    assert report["decimals"] == 3 and report["max_residual"] <= report["tolerance"] < 5.1e-4
    assert weight_set in report["weight_candidates"]
    assert f"Fitted weights: {weight_set}" in out.getvalue() and "A.6 check" in out.getvalue()
