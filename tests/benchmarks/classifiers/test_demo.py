"""The demo's local-classifier runs: seeded through the registry by `seed_demo` (no classifier registered
or called), badged demo, idempotent; the benchmark's leaderboard, a run's figures and the Benchmarks page
show them; every figure equals scikit-learn on the run's stored P(private) against the demo consensus."""
from __future__ import annotations

import io

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score

from inference import benchmarks
from inference.models import Run, RunResult
from inference.providers.onnx.models import ClassifierModel
from scoring.models import ImageScore, ScoringProfile
from tests.support.run_totals import counted_totals, stored_totals

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(settings):
    settings.DEBUG = True
    call_command("seed_demo", stdout=io.StringIO())


@pytest.fixture
def admin(seeded, client):
    client.force_login(get_user_model().objects.get(username="admin"))
    return client


def test_seed_demo_makes_two_badged_classifier_runs_through_the_registry_once(seeded):
    runs = Run.objects.filter(task="binary").order_by("model_name")
    assert [(r.provider, r.model_name) for r in runs] == [("onnx", "demo-s2p-ipd"), ("onnx", "demo-s2p-vispr")]
    assert all(r.provenance == "demo" and r.status == "finished" and r.done == r.total > 0 for r in runs)
    assert not ClassifierModel.objects.exists()  # nothing registered: the demo calls no classifier
    before = Run.objects.count(), RunResult.objects.count()
    assert benchmarks.seed_demo()["local-classifiers"] == {"runs": 0}
    assert (Run.objects.count(), RunResult.objects.count()) == before


def test_the_demo_pages_show_the_runs_with_the_badge_and_figures_equal_sklearn(admin):
    board = admin.get("/benchmarks/local-classifiers/").content.decode()
    assert board.count(">demo</span>") == 2 and "demo-s2p-ipd" in board and "demo-s2p-vispr" in board
    run = Run.objects.get(task="binary", model_name="demo-s2p-vispr")
    data = admin.get(f"/benchmarks/local-classifiers/runs/{run.pk}/?format=json&threshold=2").json()
    assert data["meta"]["provenance"] == "demo"
    got = {row["metric"]: row["estimate"]["value"] for row in data["tables"]["binary"]["rows"] if isinstance(row["estimate"], dict)}
    level = dict(ImageScore.objects.filter(profile=ScoringProfile.active()).values_list("image_id", "level"))
    ok = [(r.score, level[r.image_id] <= 2) for r in run.results.filter(outcome="ok")]
    assert run.results.exclude(outcome="ok").exists()  # seeded unreadable images are left out
    p, truth = np.array([s for s, _ in ok]), np.array([t for _, t in ok])
    assert got["AUC"] == pytest.approx(roc_auc_score(truth, p))
    assert got["balanced accuracy"] == pytest.approx(balanced_accuracy_score(truth, p >= 0.5))
    assert got["F1 (private)"] == pytest.approx(f1_score(truth, p >= 0.5))
    assert ">demo</span>" in admin.get(f"/benchmarks/local-classifiers/runs/{run.pk}/").content.decode()
    hub = admin.get("/scoring/benchmarks/").content.decode()
    assert "/benchmarks/local-classifiers/" in hub and "Local classifiers (private/public)" in hub


def test_the_demo_runs_totals_are_their_results_counted_and_cost_nothing(seeded):
    runs = Run.objects.filter(task="binary")
    assert runs.count() == 2
    for run in runs:
        assert stored_totals(run) == counted_totals(run)
        assert run.done == run.total and set(run.outcome_counts) <= {"ok", "error"}  # seeded unreadable images count too
        assert (run.tokens_in, run.tokens_out, run.estimated_cost_usd) == (0, 0, 0)  # no classifier ran
        assert run.provenance == "demo"
