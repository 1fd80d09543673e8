"""Counterfactual faces: per-image change between a pair of judge runs, collapses, sensitive groups."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.urls import reverse

from annotations.models import Annotator

from core.models import AuditEvent
from scoring.services import counterfactuals
from scoring.models import ScoringProfile
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run


@pytest.fixture
def pair(db):
    images = make_images(8, prefix="2017_91")
    truth = Annotator.ground_truth()
    # Images 0-3 show a government ID; 4-5 a face only; 6-7 nothing sensitive.
    label_everything(images, truth, lambda i, k: 1.0 if (k == "gov_ids" and i < 4) or (k == "biometrics" and i in (4, 5)) else 0.0)
    before = [0.95, 0.9, 0.92, 0.88, 0.9, 0.85, 0.2, 0.1]
    after = [0.3, 0.88, 0.4, 0.87, 0.2, 0.25, 0.2, 0.15]
    base = make_run(strategy="taxonomy")
    cf = make_run(strategy="taxonomy", cf=True)
    add_results(base, [(img, "ok", s) for img, s in zip(images, before)])
    add_results(cf, [(img, "ok", s) for img, s in zip(images[:-1], after[:-1])] + [(images[-1], "refused", None)])
    return images, base, cf, before, after


def test_counterfactual_service(pair):
    images, base, cf, before, after = pair
    data = counterfactuals.counterfactual(base, cf, ScoringProfile.active(), drop=0.3)
    assert data["common"] == 7 and data["only_without"] == 1
    changes = {r["image_id"]: r["change"] for r in data["rows"]}
    for k in range(7):
        assert changes[images[k].pk] == pytest.approx(after[k] - before[k])
    collapsed = {r["image_id"] for r in data["rows"] if r["collapsed"]}
    assert collapsed == {images[k].pk for k in (0, 2, 4, 5)}
    assert data["collapsed_sensitive"] == 2  # images 0 and 2: a government ID, not just a face
    gov = next(g for g in data["groups"] if g["attribute"] == "gov_ids")
    assert gov == {"attribute": "gov_ids", "images": 4, "collapsed": 2,
                   "mean_change": pytest.approx(np.mean([after[k] - before[k] for k in range(4)]))}
    assert sum(data["histogram"]["counts"]) == 7
    test = data["change_test"]
    assert test["n"] == 7 and test["changed"] == 6 and test["mean"] == pytest.approx(data["mean_change"])  # image 6 did not move
    assert test["lo"] <= test["mean"] <= test["hi"] < 0 and 0 < test["p_value"] < 0.1
    assert not any("biometrics" in r["sensitive_non_face"] for r in data["rows"])


def test_candidates_pair_same_model_and_strategy(pair):
    _, base, cf, *_ = pair
    make_run(strategy="zero_shot", cf=True)  # no partner
    make_run(strategy="taxonomy", cf=True, model="other-model")  # other model
    assert counterfactuals.counterfactual_candidates() == [(base, cf)]


def test_counterfactual_page_and_download(client_as, adjudicator, pair):
    images, base, cf, *_ = pair
    client = client_as(adjudicator)
    index = client.get(reverse("scoring:counterfactual"))
    assert index.status_code == 200 and f"base={base.pk}&amp;cf={cf.pk}".encode() in index.content
    page = client.get(reverse("scoring:counterfactual"), {"base": base.pk, "cf": cf.pk})
    body = page.content.decode()
    assert page.status_code == 200 and "<svg" in body
    assert base.prompt_text["system"] in body and cf.prompt_text["system"] in body
    assert "95% CI" in body and "Wilcoxon signed-rank test of no change" in body and "over the 6 images whose score changed" in body
    download = client.get(reverse("scoring:counterfactual"), {"base": base.pk, "cf": cf.pk, "format": "csv", "table": "changes", "drop": "0.5"})
    rows = list(csv.DictReader(io.StringIO(download.content.decode())))
    assert len(rows) == 7 and {r["image"] for r in rows if r["collapsed"] == "true"} == {images[k].vispr_id for k in (0, 2, 4, 5)}
    assert AuditEvent.objects.filter(action="export", data__page=f"counterfactual-{base.pk}-{cf.pk}").exists()


def test_counterfactual_refuses_bad_pairs(client_as, adjudicator, pair):
    _, base, cf, *_ = pair
    other = make_run(strategy="taxonomy", cf=True, model="other-model")
    unfinished = make_run(strategy="taxonomy", cf=True, status="running")
    annotate = make_run(task="annotate")
    client = client_as(adjudicator)
    bad = [
        {"base": base.pk}, {"cf": cf.pk}, {"base": cf.pk, "cf": base.pk}, {"base": base.pk, "cf": other.pk},
        {"base": base.pk, "cf": unfinished.pk}, {"base": base.pk, "cf": annotate.pk}, {"base": base.pk, "cf": 999999},
        {"base": "x", "cf": cf.pk}, {"base": base.pk, "cf": cf.pk, "drop": "0"}, {"base": base.pk, "cf": cf.pk, "drop": "2"},
        {"base": base.pk, "cf": cf.pk, "drop": "nan"}, {"format": "csv"}, {"base": base.pk, "cf": cf.pk, "format": "csv", "table": "nope"},
    ]
    for query in bad:
        response = client.get(reverse("scoring:counterfactual"), query)
        assert response.status_code == 400, query
    assert not AuditEvent.objects.filter(action="export").exists()
