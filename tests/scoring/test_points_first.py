"""A run's slow figures after a change: the refresh job stores the point estimates of the new data first, beside the
last intervals (marked as being recomputed), and is sent again for the whole figures (issue 37: ten runs' figures
took one worker 23 s at 100,000 images after an adjudication, each run's points about 0.2 s of its 2.5 s).

On the code before, the first job recomputed the whole figures, and no run's new point estimates showed before its
bootstrap had run; the first test fails there."""
from __future__ import annotations

import pytest
from django.utils import timezone

from inference.models import RunResult
from scoring import queries, tasks
from scoring.models import ComputedMetrics, ScoringProfile
from scoring.services.cache import jsonable
from scoring.services.run_metrics import POINTS_FIRST, compute_run_metrics, run_key, run_metrics
from tests.support.dispatch import record_sends
from tests.support.permission_cases.scoring import add_results, make_images, make_run

INTERVAL = ("lo", "hi", "defined")


def _split(report: dict) -> tuple[dict, dict]:
    """(the report without its intervals and bootstrap note, the intervals by path)."""
    intervals = {}

    def walk(node, path):
        if not isinstance(node, dict):
            return node
        if {"value", *INTERVAL} <= node.keys():
            intervals[path] = tuple(node[k] for k in INTERVAL)
            return {k: v for k, v in node.items() if k not in INTERVAL}
        return {k: walk(v, f"{path}/{k}") for k, v in node.items() if not (path == "" and k == "bootstrap")}

    return walk(report, ""), intervals


def _whole(run, profile) -> dict:
    """The run's whole figures of the data now, computed directly."""
    return jsonable(compute_run_metrics(queries.judge_results([run.pk])[run.pk], queries.ground_truth(profile), profile))


def _change(run, images, score: float) -> None:
    RunResult.objects.filter(run=run, image__in=images).update(score=score)
    run.finished_at = timezone.now()
    run.save()


@pytest.fixture
def slow_run(db, settings, monkeypatch):
    settings.CPRT_METRICS_INLINE_S = 0  # every computation counts as slow
    images = make_images(40, prefix="2017_95")
    run = make_run(strategy="taxonomy", model="points-first")
    add_results(run, [(image, "ok", image.published_score) for image in images])
    profile = ScoringProfile.active()
    run_metrics([run], profile)  # the whole figures, stored
    return run, images, profile, record_sends(monkeypatch)


def _refresh(key: str, capture) -> dict:
    with capture(execute=True):
        return tasks.refresh_cached(key)


def test_the_first_job_stores_the_new_point_estimates_beside_the_last_intervals_and_is_sent_again(slow_run, django_capture_on_commit_callbacks):
    run, images, profile, sent = slow_run
    key = run_key(run.pk, profile)
    before = ComputedMetrics.objects.get(key=key)
    _change(run, images[::3], 0.0)
    assert _refresh(key, django_capture_on_commit_callbacks) == {"key": key, "refreshed": True, "again": True}
    assert sent == [("scoring.refresh_cached", [key])]  # sent again, for the whole figures
    entry = ComputedMetrics.objects.get(key=key)
    whole = _whole(run, profile)
    assert entry.fingerprint.startswith(POINTS_FIRST) and entry.computed_at == before.computed_at
    assert _split(entry.data)[0] == _split(whole)[0]  # every point estimate: the whole computation's
    assert _split(entry.data)[1] == _split(before.data)[1]  # every interval: the last one's
    assert _split(whole)[1] != _split(before.data)[1]
    assert entry.data["bootstrap"] == {**before.data["bootstrap"], "updating": True, "intervals_computed_at": before.computed_at.isoformat()}
    served = run_metrics([run], profile)[run.pk]  # stale: served as it is ("updating")
    assert served == entry.data
    sent.clear()
    assert _refresh(key, django_capture_on_commit_callbacks) == {"key": key, "refreshed": True, "again": False}
    assert sent == []
    entry = ComputedMetrics.objects.get(key=key)
    assert not entry.fingerprint.startswith(POINTS_FIRST) and entry.data == whole  # the whole figures, as computed directly


def test_a_change_while_the_intervals_wait_does_not_hold_them_back(slow_run, django_capture_on_commit_callbacks):
    run, images, profile, sent = slow_run
    key = run_key(run.pk, profile)
    _change(run, images[::3], 0.0)
    assert _refresh(key, django_capture_on_commit_callbacks)["again"] is True
    _change(run, images[1::3], 1.0)  # before the intervals' job: that job computes the whole figures of the data now
    assert _refresh(key, django_capture_on_commit_callbacks)["again"] is False
    assert ComputedMetrics.objects.get(key=key).data == _whole(run, profile)


def test_quick_figures_are_recomputed_whole_by_their_first_job(slow_run, settings, django_capture_on_commit_callbacks):
    run, images, profile, sent = slow_run
    settings.CPRT_METRICS_INLINE_S = 1000  # the last computation was quick
    key = run_key(run.pk, profile)
    _change(run, images[::3], 0.0)
    assert _refresh(key, django_capture_on_commit_callbacks)["again"] is False
    assert sent == [] and ComputedMetrics.objects.get(key=key).data == _whole(run, profile)
