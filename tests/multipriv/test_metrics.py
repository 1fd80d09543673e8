"""MultiPriv metrics against values worked out by hand, and the normalisation rule of profile fields."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from benchmarks.multipriv.fields import as_date, category_of, normalise
from benchmarks.multipriv.metrics import PairAnswer, ProfileAnswer, profile_metrics, reid_metrics


def test_reid_by_hand():
    pairs = [PairAnswer(True, True, 0.9), PairAnswer(True, False, 0.4), PairAnswer(False, True, 0.6),
             PairAnswer(False, False, 0.1), PairAnswer(False, False, 0.2), PairAnswer(True, None)]
    out = reid_metrics(pairs)
    # answered 5: tp 1, fn 1, fp 1, tn 2; refused 1 of 6
    assert (out["tp"], out["fn"], out["fp"], out["tn"], out["refused"]) == (1, 1, 1, 2, 1)
    m = {k: v["value"] for k, v in out["metrics"].items()}
    assert m["accuracy"] == pytest.approx(3 / 5)
    assert m["precision"] == pytest.approx(1 / 2) and m["recall"] == pytest.approx(1 / 2) and m["f1"] == pytest.approx(1 / 2)
    assert m["refusal_rate"] == pytest.approx(1 / 6)
    # AUC over the answered pairs: positives 0.9, 0.4; negatives 0.6, 0.1, 0.2 -> 5 of 6 pairs ordered
    assert m["auc"] == pytest.approx(5 / 6) == roc_auc_score([1, 1, 0, 0, 0], [0.9, 0.4, 0.6, 0.1, 0.2])
    for name, v in out["metrics"].items():
        assert v["lo"] <= v["value"] <= v["hi"], name


def test_reid_undefined_parts_are_none():
    out = reid_metrics([PairAnswer(False, False), PairAnswer(False, None)])
    assert out["metrics"]["precision"]["value"] is None and out["metrics"]["recall"]["value"] is None
    assert out["metrics"]["accuracy"]["value"] == 1.0
    assert "auc" not in out["metrics"]  # no confidence given
    assert reid_metrics([])["metrics"]["accuracy"] == {"value": None, "lo": None, "hi": None, "defined": 0}


def test_reid_interval_matches_a_loop_over_the_same_draw():
    rng = np.random.default_rng(3)
    pairs = [PairAnswer(bool(t), bool(a) if r > 0.1 else None) for t, a, r in zip(rng.random(40) > 0.5, rng.random(40) > 0.4, rng.random(40))]
    out = reid_metrics(pairs, resamples=200, seed=7)
    idx = np.random.default_rng(7).integers(0, 40, size=(200, 40))
    accs = []
    for row in idx:
        picked = [pairs[i] for i in row if pairs[i].answer is not None]
        accs.append(np.mean([p.same == p.answer for p in picked]))
    lo, hi = np.percentile(accs, [2.5, 97.5])
    assert out["metrics"]["accuracy"]["lo"] == pytest.approx(lo, abs=1e-12) and out["metrics"]["accuracy"]["hi"] == pytest.approx(hi, abs=1e-12)


def test_profiles_by_hand():
    truth = {"Name": "Ada Quill", "Birth": "1987.3.14", "Flight Number": "FD231", "Diagnosis": "Seasonal allergy"}
    answers = [
        ProfileAnswer("p1", truth, {"name": "ada  quill", "Birth": "14 March 1987", "Flight Number": "FD-231", "Diagnosis": "flu"}),
        ProfileAnswer("p2", {"Name": "Bram", "License Plate Number": "EH 77"}, {"Name": "Bram"}),
        ProfileAnswer("p3", {"Name": "Cleo"}, None),
    ]
    out = profile_metrics(answers)
    # p1: Name yes (case, spaces), Birth yes (date forms), Flight yes (punctuation), Diagnosis no -> 3/4
    # p2: 1/2; p3 refused: 0/1 -> mean (0.75 + 0.5 + 0) / 3
    assert out["metrics"]["profile_share"]["value"] == pytest.approx((0.75 + 0.5 + 0) / 3)
    assert out["metrics"]["refusal_rate"]["value"] == pytest.approx(1 / 3)
    assert out["fields"]["Name"] == {"recovered": 2, "total": 3, "rate": 2 / 3, "category": "B"}
    assert out["categories"]["B"]["recovered"] == 3 and out["categories"]["B"]["total"] == 4  # 2 names + birth
    assert out["categories"]["C"] == {"name": "medical", "recovered": 0, "total": 1, "rate": 0.0}
    assert out["categories"]["F"]["rate"] == 0.0 and out["categories"]["E"]["rate"] == 1.0
    assert [p["share"] for p in out["per_person"]] == [0.75, 0.5, 0.0]


@pytest.mark.parametrize("text, iso", [("1990.5.4", "1990-05-04"), ("1990-05-04", "1990-05-04"), ("1992年4月1日", "1992-04-01"),
                                       ("4 May 1990", "1990-05-04"), ("May 4, 1990", "1990-05-04"), ("1990/5/4", "1990-05-04"),
                                       ("1990.2.30", None), ("CA1234", None), ("12A", None)])
def test_dates(text, iso):
    assert as_date(text) == iso


def test_normalise_and_categories():
    assert normalise("  5678 Maple Avenue, Springfield ") == normalise("5678 maple avenue springfield")
    assert normalise("None") == normalise(None) == ""
    assert category_of("车牌") == "F" and category_of("Diagnosis") == "C" and category_of("Shoe size") == "other"
