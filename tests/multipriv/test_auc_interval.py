"""The re-identification AUC interval uses the run's one draw and its full resample count, as
docs/multipriv.md says: equal to a plain loop over the same draw with scikit-learn's roc_auc_score on
each resample's drawn answered pairs."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from benchmarks.multipriv import metrics as multipriv
from benchmarks.multipriv.metrics import PairAnswer
from scoring.resample import draw


def pairs(n=60, seed=4):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        same = bool(rng.random() < 0.5)
        refused = rng.random() < 0.15
        conf = round(float(np.clip(rng.normal(0.65 if same else 0.4, 0.2), 0, 1)), 1)  # rounded: ties
        out.append(PairAnswer(same, None if refused else conf >= 0.5, None if refused else conf))
    return out


def test_auc_interval_is_the_shared_draw_with_every_resample():
    data = pairs()
    got = multipriv.reid_metrics(data, resamples=1000, seed=11)["metrics"]["auc"]
    idx = draw(len(data), 1000, 11)
    samples = []
    for row in idx:
        drawn = [data[i] for i in row if data[i].answer is not None]
        truth = [p.same for p in drawn]
        samples.append(roc_auc_score(truth, [p.confidence for p in drawn]) if 0 < sum(truth) < len(truth) else np.nan)
    samples = np.array(samples)
    finite = samples[np.isfinite(samples)]
    assert got["defined"] == finite.size == 1000
    assert got["lo"] == pytest.approx(np.percentile(finite, 2.5)) and got["hi"] == pytest.approx(np.percentile(finite, 97.5))
    answered = [p for p in data if p.answer is not None]
    assert got["value"] == pytest.approx(roc_auc_score([p.same for p in answered], [p.confidence for p in answered]))


def test_a_resample_without_one_class_leaves_the_auc_undefined_there():
    data = [PairAnswer(True, True, 0.9), PairAnswer(False, False, 0.2), PairAnswer(True, None, None)]
    got = multipriv.reid_metrics(data, resamples=200, seed=1)["metrics"]["auc"]
    idx = draw(3, 200, 1)
    both = sum(1 for row in idx if {0, 1} <= set(row.tolist()))
    assert got["defined"] == both < 200 and got["lo"] == got["hi"] == 1.0
