"""Per-attribute calibration (scoring/calibration.py): rates, the bootstrap interval of the difference,
the exact McNemar p-value, and the page's tables."""
from __future__ import annotations

import math

import numpy as np
import pytest
from django.urls import reverse

from scoring import calibration, resample


def exact_mcnemar(b: int, c: int) -> float:
    """Independent: twice the smaller binomial tail of the discordant split, capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def test_rates_difference_and_discordant_counts_on_a_hand_example():
    model = np.array([[1, 0], [1, 0], [1, 1], [0, 1], [0, np.nan]], dtype=float)
    reference = np.array([[0, 0], [0, 0], [1, 0], [1, 0], [0, 1]], dtype=float)
    age, race = calibration.attribute_calibration(model, reference, ["age", "race_ethnicity"], [3, 2], resamples=200)
    assert (age["n"], age["model_rate"], age["reference_rate"]) == (5, 0.6, 0.4)
    assert age["difference"] == pytest.approx(0.2)
    assert (age["model_only"], age["reference_only"]) == (2, 1)  # images 0, 1 against image 3
    assert age["p_value"] == pytest.approx(1.0)
    assert race["n"] == 4  # image 4 has no model label
    assert (race["model_only"], race["reference_only"]) == (2, 0)
    assert race["p_value"] == pytest.approx(0.5)  # 2 of 2 discordant on one side: 2 * 1/4
    assert age["lo"] <= age["difference"] <= age["hi"] and age["defined"] == 200


def test_p_value_equals_an_independent_exact_computation():
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(1, 60))
        model = rng.integers(0, 2, size=(n, 1)).astype(float)
        reference = np.where(rng.random((n, 1)) < 0.7, model, 1 - model)
        row = calibration.attribute_calibration(model, reference, ["age"], [3], resamples=0)[0]
        b = int(((model == 1) & (reference == 0)).sum())
        c = int(((model == 0) & (reference == 1)).sum())
        assert (row["model_only"], row["reference_only"]) == (b, c)
        assert row["p_value"] == pytest.approx(exact_mcnemar(b, c), rel=1e-12)


def test_bootstrap_interval_equals_a_per_resample_loop_over_the_same_draw():
    rng = np.random.default_rng(9)
    n, resamples, seed = 37, 120, 4
    model = rng.integers(0, 2, size=(n, 3)).astype(float)
    reference = rng.integers(0, 2, size=(n, 3)).astype(float)
    model[rng.random((n, 3)) < 0.2] = np.nan  # missing labels are left out of every resample
    reference[:, 2] = np.nan
    reference[:3, 2] = 1.0  # the third attribute: only 3 images with both labels
    rows = calibration.attribute_calibration(model, reference, ["a", "b", "c"], [1, 2, 3], resamples=resamples, seed=seed)
    idx = resample.draw(n, resamples, seed)
    for j, row in enumerate(rows):
        samples = []
        for b in range(resamples):
            m, r = model[idx[b], j], reference[idx[b], j]
            ok = ~np.isnan(m) & ~np.isnan(r)
            if ok.any():
                samples.append(float((m[ok] - r[ok]).mean()))
        lo, hi = np.percentile(samples, [2.5, 97.5])
        assert row["defined"] == len(samples)
        assert (row["lo"], row["hi"]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert rows[2]["defined"] < resamples  # some resamples drew none of its 3 images


def test_an_attribute_without_shared_images_has_no_figures():
    model = np.array([[1.0], [0.0]])
    reference = np.array([[np.nan], [np.nan]])
    row = calibration.attribute_calibration(model, reference, ["age"], [3])[0]
    assert row["n"] == 0 and row["difference"] is None and row["lo"] is None and row["p_value"] is None and row["defined"] == 0


@pytest.mark.django_db
def test_calibration_page_shows_the_interval_and_the_test(client, django_user_model):
    from annotations.models import Annotator
    from tests.conftest import make_user
    from tests.support.permission_cases.scoring import label_everything, make_images, make_run, submit

    staff = make_user("calib-unit-staff", "adjudicator")
    images = make_images(12, prefix="2017_74")
    for name in ("calib-unit-a", "calib-unit-b"):
        human = Annotator.for_user(make_user(name, "reviewer"))
        label_everything(images, human, lambda i, k: 1.0 if (k == "race_ethnicity" and i < 6) else 0.0)
        for image in images:
            submit(image, human)
    model = Annotator.objects.create(kind="model", name="model:calib-unit", provider="openai", model_name="gpt-calib")
    label_everything(images, model, lambda i, k: 1.0 if k == "age" else 0.0)
    run = make_run(task="annotate", annotator=model)
    run.image_ids = [i.pk for i in images]
    run.save()
    client.force_login(staff)
    data = client.get(reverse("scoring:calibration", args=[run.pk]), {"format": "json"}).json()["tables"]
    rows = {r["attribute"]: r for r in data["human_majority"]["rows"]}
    age, race = rows["age"], rows["race_ethnicity"]
    assert age["difference"]["value"] == pytest.approx(1.0) and age["model_only"] == 12
    assert age["p_value"] == pytest.approx(exact_mcnemar(12, 0))  # 2 / 2**12
    assert race["difference"]["value"] == pytest.approx(-0.5) and race["reference_only"] == 6
    assert race["difference"]["lo"] < -0.2 and race["difference"]["hi"] <= 0
    page = client.get(reverse("scoring:calibration", args=[run.pk])).content.decode()
    assert "exact McNemar" in page and "95% CI" in page
