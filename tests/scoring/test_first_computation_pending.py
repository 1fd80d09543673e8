"""A page's figures computed for the first time at scale come from a job, never from the request (issue 29).

Above CPRT_METRICS_INLINE_ROWS (here 0: every computation counts as large) a scoring page whose figures
have never been stored answers 202 "being computed" with Retry-After, stores a placeholder and sends one
refresh job per figure; the API and downloads answer 202 with a JSON body and no figures. Asking again
sends nothing more while the jobs hold their entries; once the jobs have run, the page shows the figures.
On the old code the first request computed everything inline (200), so every test here fails there.
"""
from __future__ import annotations

import html

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scoring import metrics, tasks
from scoring.models import ComputedMetrics, ScoringProfile
from scoring.services.cache import PENDING
from scoring.services.run_metrics import run_metrics
from tests.support.dispatch import record_sends
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run


@pytest.fixture
def large(settings, monkeypatch):
    """Every first computation counts as large; evaluate() fails loudly if a request runs it anyway."""
    settings.CPRT_METRICS_INLINE_ROWS = 0
    sent = record_sends(monkeypatch)
    original = metrics.evaluate
    state = {"request_may_compute": False}

    def guarded(*args, **kwargs):
        assert state["request_may_compute"], "evaluate() ran inside a request"
        return original(*args, **kwargs)

    monkeypatch.setattr(metrics, "evaluate", guarded)
    return sent, state


def judge_runs(n_runs=2, n_images=24):
    images = make_images(n_images, prefix="2017_93")
    runs = []
    for k in range(n_runs):
        run = make_run(strategy="taxonomy", model=f"pending-{k}")
        add_results(run, [(image, "ok", min(1.0, image.published_score + 0.05 * k)) for image in images])
        runs.append(run)
    return images, runs


def run_jobs(sent, state) -> list[str]:
    """Run the refresh jobs sent so far, as a worker would; returns their keys."""
    keys = [args[0] for name, args in sent if name == "scoring.refresh_cached"]
    state["request_may_compute"] = True
    try:
        for key in keys:
            assert tasks.refresh_cached(key)["refreshed"] is True
    finally:
        state["request_may_compute"] = False
    sent.clear()
    return keys


def assert_pending_page(response):
    assert response.status_code == 202
    assert response["Retry-After"] == "5" and "no-store" in response["Cache-Control"]
    body = response.content.decode()
    assert "Computing the figures" in body and 'http-equiv="refresh"' in body


def test_leaderboard_first_view_is_computed_by_jobs_then_shown(client, adjudicator, large, django_capture_on_commit_callbacks):
    sent, state = large
    _, runs = judge_runs()
    client.force_login(adjudicator)
    with django_capture_on_commit_callbacks(execute=True):
        first = client.get("/scoring/")
    assert_pending_page(first)
    assert "the leaderboard's ranking" in html.unescape(first.content.decode()) and "a run's metrics" in html.unescape(first.content.decode())
    profile = ScoringProfile.active()
    expected = sorted([f"run-metrics:{r.pk}:profile:{profile.pk}" for r in runs]) + [
        k for k in ComputedMetrics.objects.filter(key__startswith="leaderboard:").values_list("key", flat=True)]
    assert sorted(args[0] for _, args in sent) == sorted(expected) and len(expected) == 3  # one job per figure
    assert set(ComputedMetrics.objects.values_list("fingerprint", flat=True)) == {PENDING}
    with django_capture_on_commit_callbacks(execute=True):
        again = client.get("/scoring/")
    assert_pending_page(again)
    assert len(sent) == 3  # nothing sent twice while the jobs hold their entries
    run_jobs(sent, state)
    shown = client.get("/scoring/")
    assert shown.status_code == 200 and "Computing the figures" not in shown.content.decode()
    assert "pending-0" in shown.content.decode() and "pending-1" in shown.content.decode()
    assert PENDING not in set(ComputedMetrics.objects.values_list("fingerprint", flat=True))
    assert sent == []  # figures fresh: no job


def test_run_page_waits_for_its_three_figures_at_once(client, adjudicator, large, django_capture_on_commit_callbacks):
    sent, state = large
    _, (run, _) = judge_runs()
    client.force_login(adjudicator)
    with django_capture_on_commit_callbacks(execute=True):
        assert_pending_page(client.get(f"/scoring/runs/{run.pk}/"))
    profile = ScoringProfile.active()
    assert sorted(args[0] for _, args in sent) == sorted(
        f"{kind}:{run.pk}:profile:{profile.pk}" for kind in ("run-metrics", "run-page", "sensitivity"))
    run_jobs(sent, state)
    shown = client.get(f"/scoring/runs/{run.pk}/")
    assert shown.status_code == 200 and "Predicted vs ground-truth score" in shown.content.decode()


def test_agreement_and_disagreements_pages_api_and_downloads(client, adjudicator, model_annotators, large,
                                                             django_capture_on_commit_callbacks):
    sent, state = large
    images = make_images(12, prefix="2017_94")
    gpt, gemini = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gov_ids" else 0.0)
    label_everything(images, gemini, lambda i, k: 1.0 if (k == "gov_ids" and i % 2) else 0.0)
    client.force_login(adjudicator)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=adjudicator).key}")
    with django_capture_on_commit_callbacks(execute=True):
        assert_pending_page(client.get("/scoring/agreement/"))
        assert_pending_page(client.get("/scoring/disagreements/"))
        data = api.get("/api/agreement/")
        download = client.get("/scoring/agreement/?format=csv&table=summary")
    for response in (data, download):
        assert response.status_code == 202 and response["Retry-After"] == "5"
        assert response.json()["updating"] is True and response.json()["pending"] == ["agreement:all"]
        assert "report" not in response.json()
    profile = ScoringProfile.active()
    assert sorted(args[0] for _, args in sent) == ["agreement:all", f"disagreements:all:profile:{profile.pk}"]
    run_jobs(sent, state)
    assert client.get("/scoring/agreement/").status_code == 200
    assert client.get("/scoring/disagreements/").status_code == 200
    body = api.get("/api/agreement/").json()
    assert body["updating"] is False and body["report"]["pairs"]
    assert client.get("/scoring/agreement/?format=csv&table=summary").status_code == 200


def test_a_lost_job_is_sent_again_once_its_lease_has_expired(client, adjudicator, large, django_capture_on_commit_callbacks):
    sent, state = large
    _, (run, _) = judge_runs()
    client.force_login(adjudicator)
    with django_capture_on_commit_callbacks(execute=True):
        client.get(f"/scoring/runs/{run.pk}/")
    assert len(sent) == 3
    key = sent[0][1][0]
    ComputedMetrics.objects.filter(key=key).update(refresh_expires_at=timezone.now() - timezone.timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert_pending_page(client.get(f"/scoring/runs/{run.pk}/"))
    assert [args[0] for _, args in sent[3:]] == [key]  # only the entry whose job was lost


def test_small_data_and_calls_outside_a_request_compute_inline(client, adjudicator, settings, large):
    sent, state = large
    _, runs = judge_runs()
    state["request_may_compute"] = True
    # Outside a request (a worker, a command): computed here even when large.
    assert run_metrics(runs, ScoringProfile.active())[runs[0].pk]["n_valid"] == 24
    settings.CPRT_METRICS_INLINE_ROWS = 10_000  # the default's side: 2 runs x 24 results are small
    client.force_login(adjudicator)
    assert client.get("/scoring/").status_code == 200
    assert sent == []
