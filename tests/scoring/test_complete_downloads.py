"""Every figure a counterfactual page shows is in its download (issue 27): the counterfactual summary
(mean change with its interval and Wilcoxon p, checked against numpy and scipy), prompt versions with
mixed versions flagged, and the three-way page's tables as CSV and JSON."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from tests.support.permission_cases.scoring import add_results, make_images, make_run

BEFORE = [0.95, 0.9, 0.92, 0.88, 0.9, 0.85, 0.2, 0.1, 0.6, 0.7]
AFTER = [0.3, 0.88, 0.4, 0.87, 0.2, 0.25, 0.2, 0.15, 0.5, 0.72]


@pytest.fixture
def staff(client_as, adjudicator):
    return client_as(adjudicator)


def runs(images, cf_version="judge-v1"):
    base = make_run(strategy="taxonomy")
    cf = make_run(strategy="taxonomy", cf=True)
    if cf_version != base.prompt_version:
        cf.prompt_version = cf_version
        cf.save()
    add_results(base, [(img, "ok", s) for img, s in zip(images, BEFORE)])
    add_results(cf, [(img, "ok", s) for img, s in zip(images, AFTER)])
    return base, cf


def test_counterfactual_json_has_the_summary_checked_against_scipy(staff):
    images = make_images(10, prefix="2017_93")
    base, cf = runs(images)
    data = staff.get(reverse("scoring:counterfactual"), {"base": base.pk, "cf": cf.pk, "format": "json"}).json()
    summary = data["tables"]["summary"]["rows"][0]
    changes = np.array(AFTER) - np.array(BEFORE)
    assert summary["common"] == 10 and summary["mean_change"]["value"] == pytest.approx(changes.mean())
    assert summary["mean_change"]["lo"] <= changes.mean() <= summary["mean_change"]["hi"]
    assert summary["median_change"] == pytest.approx(np.median(changes))
    nonzero = changes[changes != 0]
    assert summary["wilcoxon_p"] == pytest.approx(stats.wilcoxon(nonzero).pvalue)
    assert summary["base_prompt"] == "judge-v1" and summary["mixed_prompt_versions"] is False
    assert data["meta"]["mixed_prompt_versions"] is False and data["meta"]["prompt_versions"] == {f"#{base.pk}": "judge-v1", f"#{cf.pk}": "judge-v1"}
    csv_rows = list(csv.DictReader(io.StringIO(staff.get(reverse("scoring:counterfactual"),
                                                         {"base": base.pk, "cf": cf.pk, "format": "csv", "table": "summary"}).content.decode())))
    assert float(csv_rows[0]["mean_change_lo"]) == pytest.approx(summary["mean_change"]["lo"])


def test_mixed_prompt_versions_are_flagged_on_the_page_and_in_the_download(staff):
    images = make_images(10, prefix="2017_94")
    base, cf = runs(images, cf_version="judge-v2")
    page = staff.get(reverse("scoring:counterfactual"), {"base": base.pk, "cf": cf.pk}).content.decode()
    assert 'id="mixed-prompt-versions"' in page and "judge-v2" in page
    index = staff.get(reverse("scoring:counterfactual")).content.decode()
    assert "mixed prompt versions" in index
    data = staff.get(reverse("scoring:counterfactual"), {"base": base.pk, "cf": cf.pk, "format": "json"}).json()
    assert data["meta"]["mixed_prompt_versions"] is True and data["tables"]["summary"]["rows"][0]["mixed_prompt_versions"] is True
    assert "DIFFERENT prompt versions" in data["tables"]["summary"]["note"]


def test_three_way_downloads_every_table(staff):
    images = make_images(10, prefix="2017_95")
    original = make_run(strategy="taxonomy")
    prompt = make_run(strategy="taxonomy", cf=True)
    pixel = make_run(strategy="taxonomy", face_variant={"method": "blur", "threshold": 0.5, "margin": 0.2})
    add_results(original, [(img, "ok", s) for img, s in zip(images, BEFORE)])
    add_results(prompt, [(img, "ok", s) for img, s in zip(images, AFTER)])
    add_results(pixel, [(img, "ok", min(1.0, s + 0.05)) for img, s in zip(images, AFTER)])
    query = {"original": original.pk, "prompt": prompt.pk, "pixel": pixel.pk}
    data = staff.get(reverse("scoring:three_way"), {**query, "format": "json"}).json()
    assert set(data["tables"]) == {"overall", "by_level", "groups", "images"}
    overall = {r["condition"]: r for r in data["tables"]["overall"]["rows"]}
    changes = np.array(AFTER) - np.array(BEFORE)
    assert overall["prompt-level"]["mean_change"]["value"] == pytest.approx(changes.mean())
    assert overall["prompt-level"]["prompt_version"] == "judge-v1" and data["meta"]["mixed_prompt_versions"] is False
    assert len(data["tables"]["images"]["rows"]) == 10
    response = staff.get(reverse("scoring:three_way"), {**query, "format": "csv", "table": "images"})
    assert response.status_code == 200 and len(list(csv.DictReader(io.StringIO(response.content.decode())))) == 10
    page = staff.get(reverse("scoring:three_way"), query).content.decode()
    assert "all tables as JSON" in page and "Prompt versions:" in page


@pytest.mark.parametrize("params, message", [
    ({"format": "csv", "table": "nope"}, "this page has: overall, by_level, groups, images"),
    ({"format": "json"}, "Choose three runs"),
])
def test_three_way_refuses_bad_downloads(staff, params, message):
    images = make_images(3, prefix="2017_96")
    original, prompt = make_run(strategy="taxonomy"), make_run(strategy="taxonomy", cf=True)
    pixel = make_run(strategy="taxonomy", face_variant={"method": "blur", "threshold": 0.5, "margin": 0.2})
    for run in (original, prompt, pixel):
        add_results(run, [(img, "ok", 0.5) for img in images])
    query = {"original": original.pk, "prompt": prompt.pk, "pixel": pixel.pk} if "table" in params else {}
    response = staff.get(reverse("scoring:three_way"), {**query, **params})
    assert response.status_code == 400 and message in response.content.decode()
