"""The judge-run page does page-sized work (issue 29): its plots and extremes come from data computed once
per run and ground truth and stored under an exact key, so a page view reads no result row; the figures are
those of every prediction (the downloads), and a changed ground truth changes them."""
from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations.models import Image
from scoring import tasks
from scoring.models import ScoringProfile
from scoring.services import run_page
from tests.support.dispatch import record_sends
from tests.support.permission_cases.scoring import add_results, make_images, make_run


@pytest.fixture
def staff(client_as, adjudicator):
    return client_as(adjudicator)


def judge_run(n: int = 60):
    """Predictions 1.0, 0.0 (many exact ties of the error), refused, exact, and slightly high, in turn."""
    images = make_images(n, prefix="2017_95")
    run = make_run(strategy="taxonomy", model="page-sized")
    preds = [(1.0, 0.0, None, image.published_score, min(1.0, image.published_score + 0.05))[k % 5] for k, image in enumerate(images)]
    add_results(run, [(image, "ok" if p is not None else "refused", p) for image, p in zip(images, preds)])
    return images, run


def expected_extremes(predictions: list[dict], k: int = 10) -> list[tuple[str, str, float]]:
    """The most under- and over-estimated images, picked from every prediction with plain sorts."""
    valid = [r for r in predictions if r["error"] is not None]
    under = sorted((r for r in valid if r["error"] < 0), key=lambda r: r["error"])[:k]
    over = sorted((r for r in valid if r["error"] > 0), key=lambda r: -r["error"])[:k]
    return [("under-estimated", r["image"], r["error"]) for r in under] + [("over-estimated", r["image"], r["error"]) for r in over]


def shown_extremes(body: str) -> list[str]:
    """The VISPR ids of the extremes' tiles, in page order."""
    section = body.split("Most under- and over-estimated images", 1)[1].split("</section>", 1)[0]
    return [part.split("</a>", 1)[0].rsplit(">", 1)[1] for part in section.split("<figcaption>")[1:]]


def test_the_run_pages_second_view_reads_no_result_and_shows_the_figures_of_every_prediction(staff, monkeypatch):
    monkeypatch.setattr(run_page, "SCATTER_POINTS", 10)
    images, run = judge_run()
    url = reverse("scoring:run", args=[run.pk])
    assert staff.get(url).status_code == 200  # computes and stores the page's data
    with CaptureQueriesContext(connection) as ctx:
        body = staff.get(url).content.decode()
    assert not [q["sql"] for q in ctx.captured_queries if "inference_runresult" in q["sql"]]  # not one result row read
    assert len(ctx) < 30
    tables = staff.get(url, {"format": "json"}).json()["tables"]
    predictions = tables["predictions"]["rows"]
    assert len(predictions) == 60
    want = expected_extremes(predictions)
    assert len(want) == 20 and len({e for _, _, e in want}) < 20  # ties among the errors
    assert [(r["kind"], r["image"], r["error"]) for r in tables["extremes"]["rows"]] == want  # the download: every prediction
    assert shown_extremes(body) == [image for _, image, _ in want]  # the page: its stored data, the same images
    valid = sum(r["error"] is not None for r in predictions)
    assert f"Showing a fixed sample of 10 of {valid} images." in body
    assert body.count("<svg") == 5


def test_a_changed_ground_truth_changes_the_run_page_through_the_refresh_job(staff, settings, monkeypatch, django_capture_on_commit_callbacks):
    images, run = judge_run()
    url = reverse("scoring:run", args=[run.pk])
    before = shown_extremes(staff.get(url).content.decode())
    # Image 5 is predicted 1.0: with ground truth 0 it is the most over-estimated image.
    settings.CPRT_METRICS_INLINE_S = 0  # every computation counts as slow: a job recomputes it
    Image.objects.filter(pk=images[5].pk).update(published_score=0.0, published_level=4)
    assert images[5].vispr_id != before[10]
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        stale = staff.get(url).content.decode()
    assert "Updating: some figures here are from" in stale and shown_extremes(stale) == before
    key = run_page.page_key(run.pk, ScoringProfile.active())
    assert ("scoring.refresh_cached", [key]) in sent
    for _, (name,) in sent:
        assert tasks.refresh_cached(name)["refreshed"] is True
    after = shown_extremes(staff.get(url).content.decode())
    assert after[10] == images[5].vispr_id and after != before
    assert np.isclose(staff.get(url, {"format": "json"}).json()["tables"]["extremes"]["rows"][10]["error"], 1.0)
