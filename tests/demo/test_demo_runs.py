"""The demo's runs: four judge runs (two strategies, with and without counterfactual faces) and one annotate
run, marked as demo data, idempotent, and the run, metrics, leaderboard and counterfactual pages show them."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotations.models import Label
from inference.models import Run, RunResult

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(settings):
    settings.DEBUG = True
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=io.StringIO())


def test_demo_seeds_marked_runs_once(seeded):
    runs = Run.objects.filter(task__in=("judge", "annotate")).order_by("pk")  # the CPRT demo runs (MultiPriv's: tests/multipriv)
    judge = runs.filter(task="judge")
    assert sorted(judge.values_list("strategy", "counterfactual_faces")) == [
        ("taxonomy", False), ("taxonomy", True), ("zero_shot", False), ("zero_shot", True)]
    annotate = runs.get(task="annotate")
    assert all(r.status == "finished" and r.selection.get("demo") and r.prompt_version == "demo-v1" for r in runs)
    n_images = runs.first().total_images
    assert n_images > 0 and all(r.results.count() == n_images for r in runs.exclude(task="spy-bench"))
    assert not RunResult.objects.exclude(reasoning__startswith="demo:").exists()
    assert annotate.annotator.is_demo and Label.objects.filter(annotator=annotate.annotator).count() == n_images * 22
    # The counterfactual instruction lowers the prediction where the consensus sees a face, and only there.
    plain = dict(judge.get(strategy="taxonomy", counterfactual_faces=False).results.values_list("image_id", "score"))
    cf = dict(judge.get(strategy="taxonomy", counterfactual_faces=True).results.values_list("image_id", "score"))
    assert sum(cf.values()) < sum(plain.values())
    before = Run.objects.count(), RunResult.objects.count(), Label.objects.count()
    call_command("seed_demo", stdout=io.StringIO())
    assert (Run.objects.count(), RunResult.objects.count(), Label.objects.count()) == before


def test_demo_pages_show_the_runs(seeded, client):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="admin"))
    run = Run.objects.filter(task="judge").first()
    annotate = Run.objects.get(task="annotate")
    page = client.get(reverse("inference:run_list")).content.decode()
    assert page.count(">demo</span>") == 12  # 4 judge, 1 annotate, 1 SPY-Bench, 2 MultiPriv, 2 VISPR attribute, 2 local-classifier runs
    page = client.get(reverse("inference:run_detail", args=[run.pk])).content.decode()
    assert "demo data" in page and reverse("scoring:run", args=[run.pk]) in page and "None yet" not in page
    page = client.get(reverse("scoring:run", args=[run.pk])).content.decode()
    assert "demo data" in page and reverse("inference:run_detail", args=[run.pk]) in page
    assert "yes:" in client.get(reverse("inference:run_detail", args=[annotate.pk])).content.decode()
    assert client.get(reverse("scoring:leaderboard")).content.decode().count("gpt-5.1") >= 4
    assert client.get(reverse("scoring:counterfactual")).status_code == 200


def test_demo_has_a_spy_bench_set_and_a_finished_run_on_the_spy_bench_pages(seeded, client):
    from django.contrib.auth import get_user_model

    from benchmarks.spy_bench import importing, metrics
    from benchmarks.spy_bench.models import SpyRow

    spy = Run.objects.get(task="spy-bench")
    assert spy.status == "finished" and spy.results.count() == SpyRow.objects.count() == spy.total > 0
    report = metrics.report(importing.run_rows(spy))
    assert report["metrics"]["exception"] == 0 and isinstance(report["metrics"]["hms"], float)
    client.force_login(get_user_model().objects.get(username="admin"))
    board = client.get(reverse("spy_bench:index")).content.decode()
    assert f'href="{reverse("spy_bench:run", args=[spy.pk])}"' in board and "gpt-5.1-mini" in board
    assert "Per scenario" in client.get(reverse("spy_bench:run", args=[spy.pk])).content.decode()


def test_every_demo_runs_totals_are_its_results_counted_and_claim_no_tokens_or_cost(seeded):
    """No model was called for any demo run: each shows its results' counts and no tokens or cost (the CPRT runs
    showed 1,200 made-up tokens per result, SPY-Bench's results claimed 900 its run did not show)."""
    from tests.support.run_totals import counted_totals, stored_totals

    runs = Run.objects.filter(prompt_version__startswith="demo")
    assert {"judge", "annotate", "spy-bench", "multipriv-reid", "multipriv-profile"} <= set(runs.values_list("task", flat=True))
    for run in runs:
        assert stored_totals(run) == counted_totals(run), run.task
        assert run.done == run.results.count() > 0
        assert (run.tokens_in, run.tokens_out, run.estimated_cost_usd) == (0, 0, 0), run.task
