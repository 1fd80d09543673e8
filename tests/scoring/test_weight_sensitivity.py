"""The weight-set sensitivity table (issue 27): a run's metrics under every candidate weight set the fit
cannot tell apart, recomputed here from the spec's formula and scipy, never from the project's engine."""
from __future__ import annotations

import io
import json
import math
import random

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from annotations import taxonomy
from annotations.models import Image
from scoring.models import ScoringProfile
from tests.support.permission_cases.scoring import add_results, make_run

MAXIMA = (3, 10, 5, 4)


def reference(counts, weights, lo):
    if not any(counts):
        return 4, 0.0
    level = next(i for i, n in enumerate(counts) if n > 0)
    total = sum(w * n for w, n in zip(weights, counts))
    lmax = sum(w * m for w, m in zip(weights[level:], MAXIMA[level:]))
    t = (total - weights[level]) / (lmax - weights[level])
    full = list(lo) + [0.0]
    hi = 1.0 if level == 0 else full[level - 1]
    return level + 1, full[level] + (hi - full[level]) * math.sqrt(t)


@pytest.mark.django_db
def test_sensitivity_rows_match_an_independent_computation(client_as, adjudicator, tmp_path):
    tax = taxonomy.from_file()
    rng = random.Random(8)
    rows = []
    weights, lo = (87**3, 87**2, 87, 1), (0.8305, 0.55, 0.27)
    for i in range(120):  # printed with 2 decimals: several exponential bases reproduce the file
        flat = {k: int(rng.random() < rng.choice([0.03, 0.1, 0.3])) for k in tax.keys}
        counts = [sum(flat[k] for k in tax.keys_of_level(lv)) for lv in (1, 2, 3, 4)]
        level, score = reference(counts, weights, lo)
        rows.append({"id": f"2017_{70000000 + i}", "level": level, "score": round(score, 2),
                     "binary_labels": {f"level{lv}": {k: flat[k] for k in tax.keys_of_level(lv)} for lv in (1, 2, 3, 4)}})
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    call_command("import_cprt", str(path), "--split", "test", stdout=io.StringIO())
    profile = ScoringProfile.objects.get(name="cprt-bench")
    candidates = profile.fit_report["joint"]["candidates"]
    assert len(candidates) >= 2
    images = list(Image.objects.filter(vispr_id__startswith="2017_7").order_by("id"))
    pred_rng = np.random.default_rng(2)
    run = make_run(strategy="taxonomy")
    preds = [float(np.clip(i.published_score + pred_rng.normal(0, 0.1), 0, 1)) for i in images]
    add_results(run, [(i, "ok", p) for i, p in zip(images, preds)])
    client = client_as(adjudicator)
    data = client.get(reverse("scoring:run", args=[run.pk]), {"format": "json", "table": "sensitivity"}).json()
    table = {r["name"]: r for r in data["tables"]["sensitivity"]["rows"]}
    assert len(table) == len(candidates) + 1
    gt = np.array([i.published_score for i in images])  # every image is published: the ground truth does not move
    gt_level = np.array([i.published_level for i in images])
    pred = np.array(preds)
    for c in candidates:
        row = table[c["name"]]
        assert row["pearson"] == pytest.approx(stats.pearsonr(pred, gt)[0])
        assert row["mae"] == pytest.approx(np.abs(pred - gt).mean())
        # Predicted level under the candidate's own boundaries: the most severe level whose lower bound the prediction reaches.
        bounds = list(c["lo"]) + [0.0]
        predicted = np.array([next(lv + 1 for lv in range(4) if p >= bounds[lv]) for p in pred])
        assert row["level_acc"] == pytest.approx(np.mean(predicted == gt_level))
    every = [r["level_acc"] for r in table.values()]
    assert all(r["level_acc_range"] == pytest.approx(max(every) - min(every)) for r in table.values())
    page = client.get(reverse("scoring:run", args=[run.pk])).content.decode()
    assert "Sensitivity to the weight set" in page
