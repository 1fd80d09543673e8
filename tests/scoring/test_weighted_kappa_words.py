"""The weighted κ says which weights it uses (linear, over 0 < 0.5 < 1) wherever it appears: the
agreement page, its JSON download (every table with the column, and the meta), and a value equal to
scikit-learn's linear-weighted kappa."""
from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotations.models import Annotator
from scoring import agreement
from scoring.agreement import LabelSet
from tests.support.permission_cases.scoring import label_everything, make_images, submit

pytestmark = pytest.mark.django_db


def test_page_and_json_download_name_the_linear_weights(client_as, adjudicator, reviewer_a, reviewer_b):
    images = make_images(6, prefix="2017_72")
    h1, h2 = Annotator.for_user(reviewer_a), Annotator.for_user(reviewer_b)
    label_everything(images, h1, lambda i, k: 1.0 if k == "age" else 0.0)
    label_everything(images, h2, lambda i, k: (0.5 if i < 3 else 1.0) if k == "age" else 0.0)
    for image in images:
        submit(image, h1)
        submit(image, h2)
    staff = client_as(adjudicator)
    url = reverse("scoring:agreement")
    page = staff.get(url).content.decode()
    assert "weighted κ (linear weights, 3 values)" in page
    assert "weighted κ (3 values)" not in page
    data = staff.get(url, {"format": "json"}).json()
    assert data["meta"]["weighted_kappa"] == "linear weights over 0 < 0.5 < 1"
    with_column = [name for name, t in data["tables"].items() if "weighted_kappa" in t["columns"]]
    assert with_column and all("with linear weights" in data["tables"][name]["note"] for name in with_column)


def test_the_weighted_kappa_is_scikit_learns_linear_one():
    rng = np.random.default_rng(5)
    a = rng.choice([0.0, 0.5, 1.0], size=(40, 1))
    b = np.where(rng.random((40, 1)) < 0.3, rng.choice([0.0, 0.5, 1.0], size=(40, 1)), a)
    values = np.stack([a, b])
    labels = LabelSet(values=values, names=["model:x", "model:y"], kinds=["model", "model"], keys=["attr0"], attr_levels=[1])
    report = agreement.agreement_report(labels)
    pair = report["pairs"][0]["overall"]
    want = cohen_kappa_score((a[:, 0] * 2).astype(int), (b[:, 0] * 2).astype(int), weights="linear")
    assert pair["weighted_kappa"] == pytest.approx(want)
    assert pair["weighted_kappa"] != pytest.approx(cohen_kappa_score((a[:, 0] * 2).astype(int), (b[:, 0] * 2).astype(int), weights="quadratic"))
