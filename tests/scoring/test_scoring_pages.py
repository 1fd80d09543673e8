"""The scoring pages: content against the pure functions, downloads, bad input, bounded queries."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations.models import Annotator

from core.models import AuditEvent
from scoring import metrics
from scoring.models import ComputedMetrics, ScoringProfile
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run, submit


def judge_world(n_images: int, n_runs: int = 2, prefix: str = "2017_5"):
    images = make_images(n_images, prefix=prefix)
    rng = np.random.default_rng(n_images)
    runs = []
    for r in range(n_runs):
        run = make_run(strategy=("zero_shot", "taxonomy")[r % 2], model=f"model-{r}")
        rows = []
        for k, image in enumerate(images):
            if k % 10 == 3:
                rows.append((image, "refused", None))
            else:
                rows.append((image, "ok", float(np.clip(image.published_score + rng.normal(0, 0.15), 0, 1))))
        add_results(run, rows)
        runs.append(run)
    return images, runs


def expected_report(run, images):
    from inference.models import RunResult

    by_image = {i.pk: i for i in images}
    res = list(RunResult.objects.filter(run=run).order_by("image_id"))
    gt = np.array([by_image[r.image_id].published_score for r in res])
    lv = np.array([by_image[r.image_id].published_level for r in res])
    pred = np.array([np.nan if r.score is None else r.score for r in res])
    out = np.array([r.outcome for r in res], dtype=object)
    return metrics.evaluate(gt, lv, pred, out, ScoringProfile.active().bounds)


@pytest.fixture
def staff(client_as, adjudicator):
    return client_as(adjudicator)


def test_leaderboard_shows_our_metrics_and_published_rows(staff):
    images, runs = judge_world(40)  # both runs refuse 4 of 40 images: coverage 90%
    response = staff.get(reverse("scoring:leaderboard"), {"floor": "85"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "Gemini 3 Flash" in body and "PROVISIONAL".lower() in body.lower() and "never ranked with ours" in body
    data = staff.get(reverse("scoring:leaderboard"), {"format": "json", "floor": "85"}).json()
    ours = data["tables"]["leaderboard"]["rows"]
    assert len(ours) == 2 and len(data["tables"]["paper"]["rows"]) == 29
    assert data["meta"]["common_set_size"] == 36
    want = expected_report(runs[0], images)  # same refusals in both runs: the common set is the run's own valid set
    row = next(r for r in ours if r["run"] == f"#{runs[0].pk}")
    for name in metrics.METRICS:  # point and interval: the same 36 images, the same seeded resamples
        for part in ("value", "lo", "hi"):
            assert row[name][part] == pytest.approx(want["metrics"][name][part]), (name, part)
    assert row["coverage"] == pytest.approx(36 / 40)
    assert data["meta"]["comparison_set_size"] == 40
    # At the default floor (95%) neither run is ranked; both are listed.
    default = staff.get(reverse("scoring:leaderboard"), {"format": "json"}).json()["tables"]
    assert default["leaderboard"]["rows"] == [] and len(default["not_ranked"]["rows"]) == 2


def test_leaderboard_filter_sort_and_cache(staff):
    images, runs = judge_world(20)
    data = staff.get(reverse("scoring:leaderboard"), {"strategy": "taxonomy", "format": "json", "sort": "mae", "floor": "80"}).json()
    rows = data["tables"]["leaderboard"]["rows"]
    assert {r["strategy"] for r in rows} == {"taxonomy"}
    maes = [r["mae"]["value"] for r in rows]
    assert maes == sorted(maes)
    assert ComputedMetrics.objects.filter(key__startswith="run-metrics:").count() == 1
    # A finished run's metrics are recomputed when it changes state (e.g. resumed and finished again).
    from django.utils import timezone

    from inference.models import RunResult

    key = f"run-metrics:{runs[1].pk}:profile:{ScoringProfile.active().pk}"
    before = ComputedMetrics.objects.get(key=key).data["metrics"]["mae"]["value"]
    RunResult.objects.filter(run=runs[1]).update(score=0.0)
    runs[1].finished_at = timezone.now()
    runs[1].save()
    # sorted by MAE: the predictions are constant now, so Pearson is undefined and would leave the run unranked
    again = staff.get(reverse("scoring:leaderboard"), {"strategy": "taxonomy", "format": "json", "floor": "80", "sort": "mae"}).json()
    after = ComputedMetrics.objects.get(key=key).data["metrics"]["mae"]["value"]
    assert after != before
    assert after == pytest.approx(np.mean([image.published_score for k, image in enumerate(images) if k % 10 != 3]))  # all predictions 0
    assert again["tables"]["leaderboard"]["rows"][0]["mae"]["value"] == pytest.approx(after)  # the common-set ranking followed


def test_a_two_percent_coverage_run_is_listed_but_not_ranked(staff):
    """A run that refused almost everything once ranked first; now it is listed, not ranked, and does not shrink the common set."""
    images = make_images(50, prefix="2017_58")
    good = make_run(strategy="taxonomy", model="perfect")
    add_results(good, [(image, "ok", image.published_score) for image in images])
    lazy = make_run(strategy="taxonomy", model="refuser")
    add_results(lazy, [(image, "ok" if k == 0 else "refused", images[0].published_score if k == 0 else None)
                       for k, image in enumerate(images)])
    data = staff.get(reverse("scoring:leaderboard"), {"format": "json"}).json()
    ranked = data["tables"]["leaderboard"]["rows"]
    assert [r["run"] for r in ranked] == [f"#{good.pk}"] and ranked[0]["rank"] == 1
    assert data["meta"]["common_set_size"] == 50
    listed = data["tables"]["not_ranked"]["rows"]
    assert [r["run"] for r in listed] == [f"#{lazy.pk}"] and listed[0]["coverage"] == pytest.approx(0.02)


def test_metrics_of_a_running_run_follow_its_results(staff):
    images, runs = judge_world(20, n_runs=1)
    run = runs[0]
    run.status = "running"
    run.save()
    url = reverse("scoring:run", args=[run.pk])
    first = staff.get(url, {"format": "json", "table": "excluded"}).json()["tables"]["excluded"]["rows"]
    from inference.models import RunResult

    RunResult.objects.filter(run=run, outcome="refused").update(outcome="ok", score=0.5)
    second = staff.get(url, {"format": "json", "table": "excluded"}).json()["tables"]["excluded"]["rows"]
    assert first[1]["count"] == 2 and second[1]["count"] == 0  # refused


def test_leaderboard_csv_download_is_audited(staff, adjudicator):
    judge_world(12, n_runs=1)
    response = staff.get(reverse("scoring:leaderboard"), {"format": "csv", "table": "leaderboard", "floor": "80"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {"rank", "pearson", "pairwise_ties", "pairwise_acc_strict", "intra_ties"} <= set(rows[0])
    event = AuditEvent.objects.get(action="export")
    assert event.actor == adjudicator and event.data["page"] == "leaderboard" and event.data["format"] == "csv"


@pytest.mark.parametrize("query", [
    {"format": "xml"}, {"strategy": "nope"}, {"sort": "drop table"}, {"format": "csv", "table": "other"},
    {"floor": "101"}, {"floor": "-1"}, {"floor": "nan"}, {"format": "csv"},
])
def test_leaderboard_refuses_bad_parameters(staff, query):
    judge_world(8, n_runs=1)
    response = staff.get(reverse("scoring:leaderboard"), query)
    assert response.status_code == 400
    assert b"Nothing was changed" in response.content
    assert not AuditEvent.objects.filter(action="export").exists()


def test_run_page_judge(staff):
    images, runs = judge_world(40)
    url = reverse("scoring:run", args=[runs[0].pk])
    response = staff.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    assert f"Run #{runs[0].pk}: judge severity" in body  # the kind's label heads the page
    assert body.count("<svg") == 5  # scatter + four per-level histograms
    assert "<script" not in body.split("</header>", 1)[1]  # no inline scripts on the page
    assert reverse("annotations:image_bytes", args=[images[0].pk]).rsplit("/", 2)[0] in body  # thumbnails via the protected view
    assert "Rate privacy severity" in body  # the prompt text
    binary = staff.get(url, {"threshold": "1", "format": "json", "table": "binary"}).json()["tables"]["binary"]
    assert binary["title"].endswith("levels 1–1 private")
    want = expected_report(runs[0], images)["binary"]["1"]
    assert binary["rows"][1]["estimate"]["value"] == pytest.approx(want["balanced_accuracy"]["value"])
    predictions = staff.get(url, {"format": "csv", "table": "predictions"})
    lines = list(csv.DictReader(io.StringIO(predictions.content.decode())))
    assert len(lines) == 40 and sum(r["outcome"] == "refused" for r in lines) == 4
    assert {r["image"] for r in lines} == {i.vispr_id for i in images}


def test_run_page_says_whether_the_ranking_beats_chance_and_how_it_was_tested(staff):
    images, runs = judge_world(40, n_runs=1)
    url = reverse("scoring:run", args=[runs[0].pk])
    rows = staff.get(url, {"format": "json", "table": "significance"}).json()["tables"]["significance"]["rows"]
    want = expected_report(runs[0], images)["significance"]
    intra, inter = rows
    assert intra["ranking"] == "intra-level ranking" and intra["p_value"] == pytest.approx(want["intra"]["p_value"])
    assert intra["method"] == want["intra"]["method"] and inter["method"] == want["inter"]["method"]
    assert inter["p_value"] == pytest.approx(want["inter"]["p_value"])
    assert inter["verdict"] == ("above chance" if want["inter"]["significant"] else "not shown above chance")
    assert "Ranking better than chance?" in staff.get(url).content.decode()


def test_leaderboard_and_run_page_show_the_profile_with_the_appendix_a6_check(staff):
    _, runs = judge_world(8, n_runs=1)
    profile = ScoringProfile.active()
    for url in (reverse("scoring:leaderboard"), reverse("scoring:run", args=[runs[0].pk])):
        body = staff.get(url).content.decode()
        assert "Appendix A.6" in body and ", ".join(str(w) for w in profile.weights) in body
        for example in profile.a6_check():
            assert f"{example['score']:.5f}" in body and f"{example['paper']:.3f}" in body
    assert list(profile.weights) == [658503, 7569, 87, 1]  # the provisional default reproduces both printed numbers
    assert [e["matches_printed"] for e in profile.a6_check()] == [True, True]


@pytest.mark.parametrize("threshold", ["0", "4", "two", "1.5", "-1"])
def test_run_page_refuses_bad_threshold(staff, threshold):
    _, runs = judge_world(8, n_runs=1)
    response = staff.get(reverse("scoring:run", args=[runs[0].pk]), {"threshold": threshold})
    assert response.status_code == 400
    assert b"threshold" in response.content


def test_run_page_refuses_table_of_the_other_task(staff):
    _, runs = judge_world(8, n_runs=1)
    response = staff.get(reverse("scoring:run", args=[runs[0].pk]), {"format": "csv", "table": "attributes"})
    assert response.status_code == 400


def test_run_page_annotate_run_agreement(staff, reviewer_a, reviewer_b, model_annotators):
    images = make_images(12, prefix="2017_61")
    gpt, _ = model_annotators
    truth = Annotator.ground_truth()
    # The human majority needs two humans on an item (spec section 2).
    for human in (Annotator.for_user(reviewer_a), Annotator.for_user(reviewer_b)):
        label_everything(images, human, lambda i, k: 1.0 if (k == "gov_ids" and i % 2) else 0.0)
        for image in images:
            submit(image, human)
    label_everything(images, gpt, lambda i, k: 1.0 if (k == "gov_ids" and i % 2) else 0.0)
    label_everything(images, truth, lambda i, k: 1.0 if (k == "gov_ids" and i % 3) else 0.0)
    run = make_run(task="annotate", annotator=gpt)
    run.image_ids = [i.pk for i in images]
    run.save()
    data = staff.get(reverse("scoring:run", args=[run.pk]), {"format": "json"}).json()["tables"]["attributes"]["rows"]
    gov_truth = next(r for r in data if r["against"] == truth.name and r["attribute"] == "gov_ids")
    gpt_v = [i % 2 for i in range(12)]
    truth_v = [int(bool(i % 3)) for i in range(12)]
    assert gov_truth["agreement"]["value"] == pytest.approx(np.mean(np.array(gpt_v) == np.array(truth_v)))
    assert gov_truth["agreement"]["lo"] <= gov_truth["agreement"]["value"] <= gov_truth["agreement"]["hi"]
    gov_human = next(r for r in data if r["against"] == "human majority" and r["attribute"] == "gov_ids")
    assert gov_human["agreement"]["value"] == 1.0 and gov_human["n"] == 12


def test_agreement_page_values_and_published(staff, reviewer_a, reviewer_b, model_annotators):
    images = make_images(10, prefix="2017_62")
    gpt, gem = model_annotators
    h1, h2 = Annotator.for_user(reviewer_a), Annotator.for_user(reviewer_b)
    label_everything(images, h1, lambda i, k: 1.0 if k == "age" else 0.0)
    label_everything(images, h2, lambda i, k: 1.0 if (k == "age" and i < 5) else 0.0)
    label_everything(images, gpt, lambda i, k: 0.5 if k == "age" else 0.0)
    for image in images:
        submit(image, h1)
    # reviewer_b's labelings are drafts: they must not count.
    data = staff.get(reverse("scoring:agreement"), {"format": "json"}).json()["tables"]
    summary = data["summary"]["rows"]
    assert not any(r["group"].startswith("human-human") for r in summary if r["source"] == "ours")
    for image in images:
        submit(image, h2)
    response = staff.get(reverse("scoring:agreement"))
    assert response.status_code == 200 and b"<svg" in response.content and b"published" in response.content
    data = staff.get(reverse("scoring:agreement"), {"format": "json"}).json()["tables"]
    human = next(r for r in data["summary"]["rows"] if r["group"] == "human-human")
    assert human["n"] == 220 and human["agreement"]["value"] == pytest.approx(215 / 220)  # strict consensus
    assert human["agreement"]["lo"] <= human["agreement"]["value"] <= human["agreement"]["hi"]  # cluster-bootstrap interval
    assert human["kappa_kind"] == "Fleiss' κ" and (human["paper_agreement"], human["paper_kappa"]) == (0.874, 0.652)
    published = data["paper"]["rows"]
    assert {"agreement": 0.874, "kappa": 0.652} == {k: published[0][k] for k in ("agreement", "kappa")}
    kinds = {(r["a"], r["b"]): r["agreement_kind"] for r in published}
    assert kinds[("Human", "Human")] == "strict consensus (Appendix D)"
    assert kinds[("GPT-5.1", "Human")] == "agreement with the human majority"
    assert kinds[("GPT-5.1", "Llama 4")] == "agreement between the two models"  # not "with the human majority"
    age = next(r for r in data["per_attribute"]["rows"] if r["comparison"].startswith(gpt.name) and r["attribute"] == "age")
    assert age["agreement"]["value"] == pytest.approx(0.5)  # gpt says 0.5 -> 0; human majority of (1, 1|0) is 1 for i < 5 else 0
    strict = data["strict_consensus"]["rows"][0]
    assert strict["n"] == 220 and strict["binary"]["value"] == pytest.approx(215 / 220)


def test_disagreement_queue_filters_and_sort(staff, model_annotators):
    images = make_images(6, prefix="2017_63")
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if (k == "gov_ids" and i < 2) or (k == "age" and i >= 2) else 0.0)
    label_everything(images, gem, lambda i, k: 0.0)
    data = staff.get(reverse("scoring:disagreements"), {"format": "json"}).json()["tables"]["disagreements"]["rows"]
    assert len(data) == 6
    assert [r["image"] for r in data[:2]] == [images[0].vispr_id, images[1].vispr_id]  # a level-1 dispute moves the score most
    assert data[0]["level_changes"] is True and data[-1]["impact"] < data[0]["impact"]
    only_age = staff.get(reverse("scoring:disagreements"), {"format": "json", "attribute": "age"}).json()["tables"]["disagreements"]["rows"]
    assert len(only_age) == 4
    pair = f"{gpt.pk}-{gem.pk}"
    assert len(staff.get(reverse("scoring:disagreements"), {"format": "json", "pair": pair}).json()["tables"]["disagreements"]["rows"]) == 6
    page = staff.get(reverse("scoring:disagreements"), {"pair": pair, "sort": "disputed"})
    assert page.status_code == 200 and images[0].vispr_id.encode() in page.content


@pytest.mark.parametrize("query", [
    {"attribute": "ssn"}, {"level": "5"}, {"split": "dev"}, {"pair": "1"}, {"pair": "3-3"}, {"pair": "99998-99999"},
    {"sort": "random"}, {"page": "0"}, {"page": "x"}, {"format": "pdf"},
])
def test_disagreements_refuse_bad_filters(staff, model_annotators, query):
    images = make_images(2, prefix="2017_64")
    label_everything(images, model_annotators[0], lambda i, k: 1.0)
    label_everything(images, model_annotators[1], lambda i, k: 0.0)
    response = staff.get(reverse("scoring:disagreements"), query)
    assert response.status_code == 400


def test_review_page_shows_every_label_and_blurs(staff, model_annotators, make_image):
    images = [make_image("2017_6500001")]
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gov_ids" else 0.0)
    label_everything(images, gem, lambda i, k: 0.5 if k == "gov_ids" else 0.0)
    body = staff.get(reverse("scoring:review", args=[images[0].pk])).content.decode()
    assert gpt.name in body and gem.name in body and "gov_ids seen" in body
    assert 'class="disputed"' in body
    assert 'id="unblur" class="unblur-toggle">' in body  # not checked: blurred by default
    assert reverse("annotations:image_bytes", args=[images[0].pk]) in body  # the same protected URL as labeling


# ---------------------------------------------------------------------------------------------
# Query counts do not grow with the data


def _count(client, url, params=None):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, params or {})
    assert response.status_code == 200, response.content[:500]
    return len(ctx)


@pytest.mark.parametrize("n_small,n_large", [(10, 200)])
def test_query_counts_are_bounded(staff, reviewer_a, model_annotators, n_small, n_large):
    counts = {}
    for n, prefix in ((n_small, "2017_71"), (n_large, "2017_72")):
        ComputedMetrics.objects.all().delete()
        images, runs = judge_world(n, n_runs=3, prefix=prefix)
        gpt, gem = model_annotators
        label_everything(images, gpt, lambda i, k: float(i % 3 == 0))
        label_everything(images, gem, lambda i, k: float(i % 2 == 0))
        pages = {
            "leaderboard": (reverse("scoring:leaderboard"), None),
            "run": (reverse("scoring:run", args=[runs[0].pk]), None),
            "agreement": (reverse("scoring:agreement"), None),
            "disagreements": (reverse("scoring:disagreements"), None),
            "review": (reverse("scoring:review", args=[images[0].pk]), None),
        }
        counts[n] = {name: (_count(staff, url, p), _count(staff, url, p)) for name, (url, p) in pages.items()}  # cold, warm
        from annotations.models import Image, Label
        from inference.models import Run

        Label.objects.all().delete()
        Run.objects.all().delete()
        Image.objects.all().delete()
    assert counts[n_small] == counts[n_large]


def test_run_page_annotate_run_without_annotator(staff):
    run = make_run(task="annotate", status="queued")
    response = staff.get(reverse("scoring:run", args=[run.pk]))
    assert response.status_code == 200
    assert b"no model annotator yet" in response.content and b"not finished" in response.content


def test_compare_names_every_metric_unambiguously(staff):
    """Each pairwise family has its own tie share and ties-wrong row, named as such (they read 'ties' three times)."""
    _, (a, b) = judge_world(24)
    tables = staff.get(reverse("scoring:compare"), {"a": a.pk, "b": b.pk, "format": "json"}).json()["tables"]
    labels = [row["metric"] for row in tables["comparison"]["rows"]]
    assert len(labels) == len(set(labels)) == len(metrics.ALL_METRICS)
    assert {"pairwise tie share", "inter-level acc., ties wrong", "intra-level tie share"} <= set(labels)
