"""The scoring API says when it serves stale figures (issue 29): while a refresh job recomputes a cached
computation, `/api/metrics/`, `/api/metrics/{id}/` and `/api/agreement/` answer the last figures with
`"updating": true` and the time they were computed, as the pages say "Updating"; after the job, not."""
from __future__ import annotations

from datetime import datetime

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import taxonomy
from annotations.services.labels import LabelSet, write_label_sets
from inference.models import RunResult
from scoring import tasks
from scoring.models import ScoringProfile
from scoring.services.run_metrics import run_key
from tests.support.dispatch import record_sends
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run


@pytest.fixture
def api(adjudicator):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=adjudicator).key}")
    return client


def stamp(body) -> datetime:
    return datetime.fromisoformat(body["computed_at"].replace("Z", "+00:00"))


def test_run_metrics_served_stale_say_updating_until_the_refresh_job_has_run(api, settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.CPRT_METRICS_INLINE_S = 0  # every computation counts as slow
    images = make_images(40, prefix="2017_91")
    run = make_run(strategy="taxonomy", model="stale-api")
    add_results(run, [(image, "ok", image.published_score) for image in images])
    sent = record_sends(monkeypatch)
    first = api.get(f"/api/metrics/{run.pk}/").json()  # nothing stored yet: computed in the request
    assert first["updating"] is False and first["computed_at"] and sent == []
    assert first["metrics"]["metrics"]["mae"]["value"] == pytest.approx(0.0)
    RunResult.objects.filter(run=run).update(score=0.0)
    run.finished_at = timezone.now()
    run.save()
    with django_capture_on_commit_callbacks(execute=True):
        stale = api.get(f"/api/metrics/{run.pk}/").json()
        listed = api.get("/api/metrics/").json()["results"]
    assert stale["updating"] is True and stale["metrics"] == first["metrics"] and stale["computed_at"] == first["computed_at"]
    assert [(r["run"]["id"], r["updating"], r["computed_at"]) for r in listed] == [(run.pk, True, first["computed_at"])]
    assert [name for name, _ in sent] == ["scoring.refresh_cached"]  # one job, not one per request
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.refresh_cached(key := run_key(run.pk, ScoringProfile.active())) == {"key": key, "refreshed": True, "again": True}
    points = api.get(f"/api/metrics/{run.pk}/").json()  # slow figures: the point estimates first, the intervals still the last ones
    assert points["updating"] is True and points["computed_at"] == first["computed_at"] and sent == [("scoring.refresh_cached", [key])]
    assert points["metrics"]["metrics"]["mae"]["value"] > 0.1 and points["metrics"]["bootstrap"]["updating"] is True
    assert [points["metrics"]["metrics"]["mae"][k] for k in ("lo", "hi")] == [first["metrics"]["metrics"]["mae"][k] for k in ("lo", "hi")]
    assert tasks.refresh_cached(key)["refreshed"] is True
    fresh = api.get(f"/api/metrics/{run.pk}/").json()
    assert fresh["updating"] is False and stamp(fresh) > stamp(first)
    assert fresh["metrics"]["metrics"]["mae"]["value"] == points["metrics"]["metrics"]["mae"]["value"]  # every prediction 0 now
    assert "updating" not in fresh["metrics"]["bootstrap"] and fresh["metrics"]["metrics"]["mae"]["hi"] > 0.1
    assert api.get("/api/metrics/").json()["results"][0]["updating"] is False


def test_agreement_served_stale_says_updating_until_the_refresh_job_has_run(api, settings, monkeypatch, model_annotators,
                                                                            django_capture_on_commit_callbacks):
    settings.CPRT_METRICS_INLINE_S = 0
    images = make_images(8, prefix="2017_92")
    gpt, gemini = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gov_ids" else 0.0)
    label_everything(images, gemini, lambda i, k: 1.0 if (k == "gov_ids" and i % 2) else 0.0)
    sent = record_sends(monkeypatch)
    first = api.get("/api/agreement/").json()
    assert first["updating"] is False and first["computed_at"] and first["report"]["pairs"]
    ids = taxonomy.attribute_ids()  # gemini's labels changed through the label-writing API (it bumps the label version)
    write_label_sets([LabelSet(image.pk, gemini.pk, {pk: (1.0, "") for pk in ids.values()}) for image in images])
    with django_capture_on_commit_callbacks(execute=True):
        stale = api.get("/api/agreement/").json()
    assert stale["updating"] is True and stale["report"] == first["report"] and stale["computed_at"] == first["computed_at"]
    assert sent == [("scoring.refresh_cached", ["agreement:all"])]
    assert tasks.refresh_cached("agreement:all")["refreshed"] is True
    fresh = api.get("/api/agreement/").json()
    assert fresh["updating"] is False and stamp(fresh) > stamp(first) and fresh["report"] != first["report"]


def test_a_request_recomputes_quick_stale_figures_inline_only_within_the_budget(api, settings, monkeypatch,
                                                                               django_capture_on_commit_callbacks):
    """Each run's figures were quick (0.3 s), but three of them would take a request past CPRT_METRICS_INLINE_S:
    one is recomputed inline, the others are served stale while jobs recompute them (all three were recomputed in
    the request before: ten runs of 0.4 s made one answer take 3.5 s after an adjudication at 30,000 images)."""
    from scoring.models import ComputedMetrics

    settings.CPRT_METRICS_INLINE_S = 0.5
    images = make_images(30, prefix="2017_93")
    runs = [make_run(strategy="taxonomy", model=f"budget-{k}") for k in range(3)]
    for run in runs:
        add_results(run, [(image, "ok", image.published_score) for image in images])
    sent = record_sends(monkeypatch)
    first = api.get("/api/metrics/").json()["results"]
    assert [r["updating"] for r in first] == [False] * 3 and sent == []  # first computations, in the request
    ComputedMetrics.objects.filter(key__startswith="run-metrics:").update(seconds=0.3)
    for run in runs:  # every run's results change: its figures are stale
        RunResult.objects.filter(run=run).update(score=0.0)
        run.finished_at = timezone.now()
        run.save()
    with django_capture_on_commit_callbacks(execute=True):
        listed = api.get("/api/metrics/").json()["results"]
    assert sorted(r["updating"] for r in listed) == [False, True, True]
    assert len(sent) == 2 and {name for name, _ in sent} == {"scoring.refresh_cached"}
    for _, args in sent:
        assert tasks.refresh_cached(args[0])["refreshed"] is True
    assert [r["updating"] for r in api.get("/api/metrics/").json()["results"]] == [False] * 3
