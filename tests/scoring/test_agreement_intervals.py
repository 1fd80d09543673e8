"""Agreement figures of issue 27 against independent implementations: PABAK and Gwet's AC1 from their
textbook formulas, image-level cluster-bootstrap intervals recomputed resample by resample with
scikit-learn's kappa, a plain Fleiss loop and a plain strict-consensus loop, ground truth left out of the
annotators, populations stated; the strict consensus intervals through the page, its downloads and the API."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotations import taxonomy
from annotations.models import Annotator
from scoring import agreement, agreement_ci
from scoring.agreement import LabelSet
from tests.support.permission_cases.scoring import label_everything, make_images, submit

KEYS = [f"attr{j}" for j in range(6)]
LEVELS_ = [1, 2, 2, 3, 4, 4]
B = 120


def labels(rng, n_images, noise, base=None, missing=0.0):
    base = rng.choice([0.0, 0.5, 1.0], size=(n_images, len(KEYS)), p=[0.7, 0.1, 0.2]) if base is None else base
    out = np.where(rng.random(base.shape) < noise, rng.choice([0.0, 0.5, 1.0], size=base.shape), base)
    return np.where(rng.random(base.shape) < missing, np.nan, out), base


def textbook_ac1(a, b):
    po = np.mean(a == b)
    pi1 = (np.mean(a) + np.mean(b)) / 2
    pe = (pi1 * (1 - pi1) + (1 - pi1) * pi1) / (2 - 1)  # sum over the two categories of pi_q (1 - pi_q), k - 1 = 1
    return (po - pe) / (1 - pe)


def test_pabak_and_ac1_match_their_formulas_on_a_rare_attribute():
    a = np.array([0] * 95 + [1] * 3 + [0, 1])
    b = np.array([0] * 95 + [1] * 3 + [1, 0])
    cm = np.array([[np.sum((a == i) & (b == j)) for j in (0, 1)] for i in (0, 1)])
    po = np.mean(a == b)
    assert agreement_ci.pabak(cm) == pytest.approx(2 * po - 1)
    assert agreement_ci.gwet_ac1(cm) == pytest.approx(textbook_ac1(a, b))
    # Rare attribute: AC1 and PABAK stay high where kappa is much lower.
    assert agreement_ci.gwet_ac1(cm) > 0.95 and cohen_kappa_score(a, b) < 0.75


def study(n_images=24, seed=3):
    rng = np.random.default_rng(seed)
    h1, base = labels(rng, n_images, 0.1)
    h2, _ = labels(rng, n_images, 0.15, base, missing=0.05)
    m1, _ = labels(rng, n_images, 0.3, base)
    m2, _ = labels(rng, n_images, 0.25, base)
    h1[n_images - 4:] = np.nan  # four images with one human only: outside the human study
    gt = (base == 1).astype(float)
    values = np.stack([h1, h2, m1, m2, gt])
    return LabelSet(values=values, names=["human:a", "human:b", "model:x", "model:y", "ground-truth:bench"],
                    kinds=["human", "human", "model", "model", "ground_truth"], keys=KEYS, attr_levels=LEVELS_,
                    image_ids=list(range(n_images)), annotator_ids=[1, 2, 3, 4, 5])


def draws(n):
    return np.random.default_rng(agreement_ci.SEED).integers(0, n, size=(B, n), dtype=np.int32)


def test_ground_truth_is_not_an_annotator_and_populations_are_stated():
    report = agreement.agreement_report(study(), resamples=B)
    names = {a["name"] for a in report["annotators"]}
    assert "ground-truth:bench" not in names
    assert all("ground-truth" not in (p["a"] + p["b"]) for p in report["pairs"] + report["vs_majority"])
    pops = {(p["a"], p["b"]): p["population"] for p in report["pairs"]}
    assert pops[("model:x", "model:y")] == {"rule": "all images labelled by both", "images": 24}
    assert pops[("human:a", "model:x")] == {"rule": "human study images", "images": 20}


def test_model_pair_kappa_interval_equals_sklearn_per_resample():
    data = study()
    report = agreement.agreement_report(data, resamples=B)
    pair = next(p for p in report["pairs"] if (p["a"], p["b"]) == ("model:x", "model:y"))
    x, y = (data.values[2] == 1).astype(int), (data.values[3] == 1).astype(int)
    samples, attr_samples, ac1 = [], [], []
    for ix in draws(x.shape[0]):
        samples.append(cohen_kappa_score(x[ix].ravel(), y[ix].ravel()))
        attr_samples.append(cohen_kappa_score(x[ix, 0], y[ix, 0]) if len(set(x[ix, 0]) | set(y[ix, 0])) > 1 else np.nan)
        ac1.append(textbook_ac1(x[ix].ravel(), y[ix].ravel()))
    ci = pair["ci"]
    assert ci["overall"]["kappa"]["lo"] == pytest.approx(np.percentile(samples, 2.5))
    assert ci["overall"]["kappa"]["hi"] == pytest.approx(np.percentile(samples, 97.5))
    assert ci["overall"]["ac1"]["lo"] == pytest.approx(np.percentile(ac1, 2.5))
    defined = np.array(attr_samples)[np.isfinite(attr_samples)]
    assert ci["attributes"]["attr0"]["kappa"]["lo"] == pytest.approx(np.percentile(defined, 2.5))
    assert ci["attributes"]["attr0"]["kappa"]["defined"] == defined.size
    assert pair["overall"]["pabak"] == pytest.approx(2 * np.mean(x == y) - 1)


def fleiss_reference(ratings):
    """Fleiss' kappa of a list of per-item rating lists (binary), items with >= 2 ratings."""
    items = [r for r in ratings if len(r) >= 2]
    p_i = [(sum(v == 1 for v in r) * (sum(v == 1 for v in r) - 1) + sum(v == 0 for v in r) * (sum(v == 0 for v in r) - 1))
           / (len(r) * (len(r) - 1)) for r in items]
    share = sum(sum(r) for r in items) / sum(len(r) for r in items)
    p_e = share**2 + (1 - share) ** 2
    return (np.mean(p_i) - p_e) / (1 - p_e), np.mean([len(set(r)) == 1 for r in items])


def test_human_human_intervals_equal_a_fleiss_loop_over_study_resamples():
    data = study()
    report = agreement.agreement_report(data, resamples=B)
    humans = (np.where(np.isnan(data.values[:2]), np.nan, data.values[:2] == 1)).astype(float)
    study_images = np.flatnonzero((~np.isnan(data.values[:2])).any(axis=2).sum(axis=0) >= 2)
    kappas, stricts = [], []
    for ix in draws(study_images.size):
        chosen = study_images[ix]
        ratings = [[v for v in humans[:, i, j] if not np.isnan(v)] for i in chosen for j in range(len(KEYS))]
        k, s = fleiss_reference(ratings)
        kappas.append(k)
        stricts.append(s)
    ci = report["human_human"]["ci"]["overall"]
    assert ci["fleiss_kappa"]["lo"] == pytest.approx(np.percentile(kappas, 2.5))
    assert ci["fleiss_kappa"]["hi"] == pytest.approx(np.percentile(kappas, 97.5))
    assert ci["strict"]["lo"] == pytest.approx(np.percentile(stricts, 2.5))


def test_alpha_interval_equals_the_point_function_per_resample():
    data = study()
    report = agreement.agreement_report(data, resamples=B)
    models = np.asarray(data.values[2:4])
    samples = [agreement.krippendorff_alpha(models[:, ix, :])["ordinal_three_valued"] for ix in draws(models.shape[1])]
    row = next(r for r in report["krippendorff"] if r["annotators_kind"] == "models only")
    assert row["ci"]["ordinal_three_valued"]["lo"] == pytest.approx(np.percentile(samples, 2.5))
    assert row["ci"]["ordinal_three_valued"]["hi"] == pytest.approx(np.percentile(samples, 97.5))
    nominal = [agreement.krippendorff_alpha(models[:, ix, :])["nominal_binary"] for ix in draws(models.shape[1])]
    assert row["ci"]["nominal_binary"]["lo"] == pytest.approx(np.percentile(nominal, 2.5))


def test_three_valued_strict_consensus_interval_equals_a_plain_loop_over_the_same_draws():
    """The strict consensus rate on 0 / 0.5 / 1 (and binarised) per resample of the study images, item by item."""
    data = study()
    report = agreement.agreement_report(data, resamples=B)
    humans = np.asarray(data.values[:2])
    study_images = np.flatnonzero((~np.isnan(humans)).any(axis=2).sum(axis=0) >= 2)

    def rates(chosen, attributes):
        n = three = binary = 0
        for i in chosen:
            for j in attributes:
                given = [v for v in humans[:, i, j] if not np.isnan(v)]
                if len(given) >= 2:
                    n += 1
                    three += len(set(given)) == 1
                    binary += len({v == 1.0 for v in given}) == 1
        return (three / n, binary / n) if n else (np.nan, np.nan)

    scopes = {"overall": range(len(KEYS)), "attr1": [1], "level 4": [j for j, lv in enumerate(LEVELS_) if lv == 4]}
    samples = {scope: np.array([rates(study_images[ix], cols) for ix in draws(study_images.size)]) for scope, cols in scopes.items()}
    sc = report["strict_consensus"]
    assert sc["overall"]["three_valued"] == pytest.approx(rates(study_images, range(len(KEYS)))[0])
    assert sc["overall"]["three_valued"] < sc["overall"]["binary"]  # a 0.5 against a 0 agrees only once binarised
    got = {"overall": sc["ci"]["overall"], "attr1": sc["ci"]["attributes"]["attr1"], "level 4": sc["ci"]["levels"]["4"]}
    for scope, s in samples.items():
        for col, name in ((0, "three_valued"), (1, "binary")):
            defined = s[:, col][np.isfinite(s[:, col])]
            assert got[scope][name]["lo"] == pytest.approx(np.percentile(defined, 2.5))
            assert got[scope][name]["hi"] == pytest.approx(np.percentile(defined, 97.5))
            assert got[scope][name]["defined"] == defined.size
    # The binarised rate is the human-human strict rate: one interval, from the same draws.
    assert sc["ci"]["overall"]["binary"] == report["human_human"]["ci"]["overall"]["strict"]


def test_strict_consensus_intervals_on_the_page_in_its_downloads_and_the_api(client_as, adjudicator, reviewer_a, reviewer_b):
    images = make_images(12, prefix="2017_71")
    h1, h2 = Annotator.for_user(reviewer_a), Annotator.for_user(reviewer_b)
    label_everything(images, h1, lambda i, k: 1.0 if k == "age" else 0.0)
    # age: 0.5 against 1 on images 0-3 (disagree either way); gov_ids: 0.5 against 0 on images 0, 3, 6, 9 (agree once binarised).
    label_everything(images, h2, lambda i, k: (0.5 if i < 4 else 1.0) if k == "age" else (0.5 if k == "gov_ids" and i % 3 == 0 else 0.0))
    for image in images:
        submit(image, h1)
        submit(image, h2)
    # Plain numpy with the study's draws (both humans labelled all 12 images): per image, how many of its
    # attributes every human labelled alike.
    attrs = len(taxonomy.active().keys)
    same3 = np.array([attrs - (i < 4) - (i % 3 == 0) for i in range(12)])
    same2 = np.array([attrs - (i < 4) for i in range(12)])
    idx = np.random.default_rng(agreement_ci.SEED).integers(0, 12, size=(agreement_ci.N_BOOT, 12))
    want = {name: {"value": float(s.sum() / (12 * attrs)), "lo": pytest.approx(np.percentile(s[idx].sum(axis=1) / (12 * attrs), 2.5)),
                   "hi": pytest.approx(np.percentile(s[idx].sum(axis=1) / (12 * attrs), 97.5))}
            for name, s in (("three_valued", same3), ("binary", same2))}
    staff = client_as(adjudicator)
    url = reverse("scoring:agreement")
    row = staff.get(url, {"format": "json"}).json()["tables"]["strict_consensus"]["rows"][0]
    assert row["scope"] == "all items" and row["n"] == 12 * attrs
    assert row["three_valued"] == want["three_valued"] and row["binary"] == want["binary"]
    assert want["three_valued"]["value"] == (12 * attrs - 8) / (12 * attrs)
    lines = list(csv.DictReader(io.StringIO(staff.get(url, {"format": "csv", "table": "strict_consensus"}).content.decode())))
    assert {k: float(lines[0][k]) for k in ("three_valued", "three_valued_lo", "three_valued_hi")} == {
        "three_valued": row["three_valued"]["value"], "three_valued_lo": row["three_valued"]["lo"], "three_valued_hi": row["three_valued"]["hi"]}
    page = staff.get(url).content.decode()
    shown = f'{row["three_valued"]["value"]:.3f} <span class="ci">[{row["three_valued"]["lo"]:.3f}, {row["three_valued"]["hi"]:.3f}]</span>'
    assert shown in page
    report = staff.get("/api/agreement/").json()["report"]
    ci = report["strict_consensus"]["ci"]["overall"]
    assert (ci["three_valued"]["lo"], ci["three_valued"]["hi"]) == (row["three_valued"]["lo"], row["three_valued"]["hi"])
    assert ci["three_valued"]["defined"] == agreement_ci.N_BOOT


def _labels(rng, shape, missing=0.1):
    values = rng.choice([0.0, 0.5, 1.0], size=shape, p=[0.6, 0.15, 0.25])
    values[rng.random(shape) < missing] = np.nan
    return values


def test_binary_counts_folded_from_the_three_valued_ones_equal_the_counted_ones():
    rng = np.random.default_rng(7)
    a3, b3 = _labels(rng, (300, 22)), _labels(rng, (300, 22))
    a, b = agreement.binarise_array(a3), agreement.binarise_array(b3)
    cm3 = agreement_ci.confusion_cells(a3 * 2, b3 * 2, 3)[0].toarray().sum(axis=1).reshape(22, 3, 3)
    cm2 = agreement_ci.confusion_cells(a, b, 2)[0].toarray().sum(axis=1).reshape(22, 2, 2)
    assert np.array_equal(agreement_ci.fold_binary(cm3), cm2)


def test_a_pairs_intervals_are_the_same_numbers_with_its_binary_cells_folded_or_counted(monkeypatch):
    """One set of per-image cells (the three-valued ones) serves the binary figures too; they equal, bit for bit,
    the figures from binary cells counted on their own (the code before), on the same draw."""
    rng = np.random.default_rng(11)
    a3, b3 = _labels(rng, (400, 22)), _labels(rng, (400, 22))
    a, b = agreement.binarise_array(a3), agreement.binarise_array(b3)
    levels = np.array([1 + j % 4 for j in range(22)])
    keys = [f"k{j}" for j in range(22)]
    idx = agreement_ci.resample.draw(400, 60, 3)
    folded = agreement_ci.pair_intervals(a, b, a3, b3, levels, keys, idx)
    monkeypatch.setattr(agreement_ci, "_binarised", lambda three, binary: False)
    counted = agreement_ci.pair_intervals(a, b, a3, b3, levels, keys, idx)
    assert folded == counted
    # a binary pair that is not the three-valued one binarised keeps its own cells
    monkeypatch.undo()
    other = agreement.binarise_array(_labels(rng, (400, 22)))
    assert agreement_ci.pair_intervals(other, b, a3, b3, levels, keys, idx) != folded
