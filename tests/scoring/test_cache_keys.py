"""The metrics cache keys are exact: unchanged data gives the same key on every read (also under a
parallel plan on PostgreSQL, where a float sum changes with the order the workers add rows in), a
change gives another key, and the leaderboard's second request computes nothing."""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from django.db import connection
from django.urls import reverse

from annotations.models import Image
from scoring import metrics, queries, ranking
from scoring.models import ComputedMetrics, ImageScore, ScoringProfile
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run

PARALLEL = (
    "SET parallel_setup_cost = 0",
    "SET parallel_tuple_cost = 0",
    "SET min_parallel_table_scan_size = 0",
    "SET max_parallel_workers_per_gather = 4",
)

on_postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="a parallel plan needs PostgreSQL")


def _force_parallel_plans():
    with connection.cursor() as cursor:
        for statement in PARALLEL:
            cursor.execute(statement)


def _scored_images(n: int, seed: int = 7):
    """n images with published scores and a stored score under the active profile, all continuous floats."""
    rng = np.random.default_rng(seed)
    published = rng.random(n)
    Image.objects.bulk_create(
        [Image(vispr_id=f"2017_8{i:06d}", split="test", source="cache-key-test", published_level=1 + i % 4,
               published_score=float(published[i])) for i in range(n)],
        batch_size=5000,
    )
    profile = ScoringProfile.active()
    scores = rng.random(n)
    ids = list(Image.objects.filter(source="cache-key-test").order_by("id").values_list("id", flat=True))
    ImageScore.objects.bulk_create(
        [ImageScore(image_id=image_id, profile=profile, binary_labels={}, n1=0, n2=0, n3=0, n4=1, level=4, score=float(scores[k]))
         for k, image_id in enumerate(ids)],
        batch_size=5000,
    )
    return profile


@on_postgresql
def test_fingerprints_are_stable_under_a_parallel_plan(model_annotators):
    profile = _scored_images(40_000)
    gpt, gem = model_annotators
    label_everything(list(Image.objects.filter(source="cache-key-test")[:2000]), gpt, lambda i, k: float(i % 3 == 0) / 2)
    _force_parallel_plans()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN ANALYZE SELECT SUM(score) FROM {ImageScore._meta.db_table}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Gather" in plan and "Workers Launched: 0" not in plan, plan  # the test means something only with workers
    gt_keys = {queries.ground_truth_fingerprint(profile) for _ in range(8)}
    label_keys = {queries.label_fingerprint() for _ in range(4)}
    assert len(gt_keys) == 1 and len(label_keys) == 1


def test_fingerprints_follow_every_change(model_annotators):
    profile = _scored_images(50)
    gpt, _ = model_annotators
    images = list(Image.objects.filter(source="cache-key-test").order_by("id"))
    label_everything(images[:5], gpt, lambda i, k: 0.0)
    gt, labels = queries.ground_truth_fingerprint(profile), queries.label_fingerprint()
    assert (gt, labels) == (queries.ground_truth_fingerprint(profile), queries.label_fingerprint())
    # A published score nudged by 1e-6, a stored score by 1e-6: each changes the key.
    Image.objects.filter(pk=images[3].pk).update(published_score=images[3].published_score + 1e-6)
    gt2 = queries.ground_truth_fingerprint(profile)
    assert gt2 != gt
    # A stored score counts only where no published value wins (issue 37): images[4] and [5] lose theirs.
    Image.objects.filter(pk__in=[images[4].pk, images[5].pk]).update(published_score=None, published_level=None)
    gt3 = queries.ground_truth_fingerprint(profile)
    assert gt3 != gt2
    row = ImageScore.objects.get(image=images[4], profile=profile)
    ImageScore.objects.filter(pk=row.pk).update(score=row.score + 1e-6, computed_at=row.computed_at)  # same timestamp
    gt4 = queries.ground_truth_fingerprint(profile)
    assert gt4 != gt3
    # Two consensus-scored images exchanging their scores and levels: every plain sum stays, the key changes.
    a, b = (ImageScore.objects.get(image=images[k], profile=profile) for k in (4, 5))
    assert (a.score, a.level) != (b.score, b.level)
    ImageScore.objects.filter(pk=a.pk).update(score=b.score, level=b.level)
    ImageScore.objects.filter(pk=b.pk).update(score=a.score, level=a.level)
    assert queries.ground_truth_fingerprint(profile) != gt4
    # What changes no run's figures keeps the key: a stored score under a published one, and a rescore that
    # stores the same values again (an adjudication that leaves the consensus where it was).
    gt6 = queries.ground_truth_fingerprint(profile)
    under = ImageScore.objects.get(image=images[6], profile=profile)
    ImageScore.objects.filter(pk=under.pk).update(score=under.score / 2, level=1)
    ImageScore.objects.filter(pk=a.pk).update(computed_at=a.computed_at.replace(year=a.computed_at.year + 1))
    assert queries.ground_truth_fingerprint(profile) == gt6
    # A label value changed through the label-writing API changes the label key (an integer version bumped
    # by every write path: tests/scoring/test_label_version.py covers each).
    from annotations.models import Label
    from annotations.services.labels import write_labels

    label = Label.objects.filter(annotator=gpt).order_by("id").first()
    write_labels(label.image_id, gpt.pk, {label.attribute_id: (1.0, label.rationale)})
    assert queries.label_fingerprint() != labels


@pytest.fixture
def staff(client_as, adjudicator):
    return client_as(adjudicator)


@pytest.mark.parametrize("parallel", [False, pytest.param(True, marks=on_postgresql)])
def test_the_leaderboards_second_request_computes_nothing(staff, parallel):
    images = make_images(400, prefix="2017_83")
    rng = np.random.default_rng(3)
    for r in range(3):
        run = make_run(strategy="taxonomy", model=f"cache-{r}")
        add_results(run, [(image, "ok", float(rng.random())) for image in images])
    if parallel:
        _force_parallel_plans()
    url = reverse("scoring:leaderboard")
    with mock.patch.object(metrics, "evaluate", wraps=metrics.evaluate) as evaluate, \
            mock.patch.object(ranking, "comparison_ranking", wraps=ranking.comparison_ranking) as rank:
        first = staff.get(url, {"format": "json", "floor": "80"})
        assert first.status_code == 200
        assert evaluate.call_count == 3 and rank.call_count == 1
        stamps = dict(ComputedMetrics.objects.values_list("key", "computed_at"))
        for _ in range(3):
            again = staff.get(url, {"format": "json", "floor": "80"})
            assert again.json()["tables"] == first.json()["tables"]
        assert evaluate.call_count == 3 and rank.call_count == 1  # served from the cache
        assert dict(ComputedMetrics.objects.values_list("key", "computed_at")) == stamps


def _leaderboard_json(client):
    # sorted by MAE: the tests below make one run's predictions constant, where a correlation is undefined
    # (such a run is listed, not ranked, under a correlation sort)
    response = client.get(reverse("scoring:leaderboard"), {"format": "json", "floor": "80", "sort": "mae"})
    assert response.status_code == 200
    return response.json()


def test_a_slow_stale_computation_is_shown_updating_while_a_job_recomputes_it(staff, settings, monkeypatch, django_capture_on_commit_callbacks):
    from django.utils import timezone

    from inference.models import RunResult
    from scoring import tasks
    from tests.support.dispatch import record_sends

    settings.CPRT_METRICS_INLINE_S = 0  # every computation counts as slow
    images = make_images(60, prefix="2017_84")
    runs = []
    for r in range(2):
        run = make_run(strategy="taxonomy", model=f"stale-{r}")
        add_results(run, [(image, "ok", image.published_score) for image in images])
        runs.append(run)
    sent = record_sends(monkeypatch)
    first = _leaderboard_json(staff)  # nothing stored yet: computed in the request
    assert "updating" not in first["meta"] and sent == []
    RunResult.objects.filter(run=runs[1]).update(score=0.0)
    runs[1].finished_at = timezone.now()
    runs[1].save()
    with mock.patch.object(metrics, "evaluate", wraps=metrics.evaluate) as evaluate, \
            mock.patch.object(ranking, "comparison_ranking", wraps=ranking.comparison_ranking) as rank, \
            django_capture_on_commit_callbacks(execute=True):
        stale = _leaderboard_json(staff)
        page = staff.get(reverse("scoring:leaderboard"), {"floor": "80", "sort": "mae"})
        assert evaluate.call_count == 0 and rank.call_count == 0  # nothing recomputed inside the requests
    assert stale["meta"]["updating"] is True and stale["tables"] == first["tables"]  # the last figures
    assert "Updating: some figures here are from" in page.content.decode()
    profile = ScoringProfile.active()
    keys = sorted(args[0] for name, args in sent)
    assert {name for name, _ in sent} == {"scoring.refresh_cached"} and len(keys) == 2  # one job per entry, not per request
    assert keys[1] == f"run-metrics:{runs[1].pk}:profile:{profile.pk}" and keys[0].startswith("leaderboard:")
    queue, ran = list(keys), []
    sent.clear()
    while queue:  # the jobs, and those they send
        key = queue.pop(0)
        with django_capture_on_commit_callbacks(execute=True):
            done = tasks.refresh_cached(key)
        ran.append((key, done["refreshed"], done["again"]))
        queue += [args[0] for _, args in sent]
        sent.clear()
    # The run's figures were slow: its point estimates first, then (sent again) the whole figures.
    assert ran == [(keys[0], True, False), (keys[1], True, True), (keys[1], True, False)]
    fresh = _leaderboard_json(staff)
    assert "updating" not in fresh["meta"]
    row = next(r for r in fresh["tables"]["leaderboard"]["rows"] if r["run"] == f"#{runs[1].pk}")
    assert row["mae"]["value"] == pytest.approx(np.mean([image.published_score for image in images]))  # every prediction 0 now
    with mock.patch.object(metrics, "evaluate", wraps=metrics.evaluate) as evaluate:
        assert tasks.refresh_cached(keys[1])["refreshed"] is True  # a second delivery finds the entry fresh
        assert evaluate.call_count == 0


def test_a_refresh_job_held_by_a_live_worker_is_not_run_twice(staff, settings, monkeypatch):
    from core.jobs import Lease
    from scoring import tasks
    from tests.support.dispatch import record_sends

    settings.CPRT_METRICS_INLINE_S = 0
    images = make_images(20, prefix="2017_85")
    run = make_run(strategy="taxonomy", model="held")
    add_results(run, [(image, "ok", 0.5) for image in images])
    record_sends(monkeypatch)
    _leaderboard_json(staff)
    key = f"run-metrics:{run.pk}:profile:{ScoringProfile.active().pk}"
    worker = Lease(ComputedMetrics.objects.filter(key=key), 60, owner_field="refresh_owner", expiry_field="refresh_expires_at")
    assert worker.claim()
    assert tasks.refresh_cached(key) == {"key": key, "refreshed": False}


@pytest.mark.parametrize("key", ["", 7, "x" * 201, None])
def test_the_refresh_task_refuses_a_bad_key(key):
    from scoring import tasks

    with pytest.raises(ValueError, match="scoring.refresh_cached refuses its input: key"):
        tasks.refresh_cached(key)
