"""The demo's VISPR attribute runs: seeded through the registry by `seed_demo`, badged demo, idempotent,
and the leaderboard and figures pages show them with figures."""
from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotations.models import Image, VisprAttribute
from inference import benchmarks
from inference.models import Run, RunResult
from tests.support.run_totals import counted_totals, stored_totals

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(settings):
    settings.DEBUG = True
    call_command("seed_demo", stdout=io.StringIO())


def test_seed_demo_makes_two_badged_runs_through_the_registry_once(seeded):
    runs = Run.objects.filter(task="vispr-attributes").order_by("model_name")
    assert [(r.provider, r.model_name) for r in runs] == [("gemini", "gemini-3-flash"), ("openai", "gpt-5.1")]
    assert all(r.selection["demo"] and r.request_params == {"demo": True} and r.status == "finished" for r in runs)
    demo_images = Image.objects.filter(source="demo")
    assert all(i.vispr_labels for i in demo_images) and not demo_images.exclude(vispr_split="").exists()
    assert not VisprAttribute.objects.exists()  # the demo imports no release: its attributes live in the runs
    before = Run.objects.count(), RunResult.objects.count()
    assert benchmarks.seed_demo()["vispr-attributes"] == {"runs": 0, "images_labelled": 0}
    assert (Run.objects.count(), RunResult.objects.count()) == before


def test_the_demo_pages_show_figures_with_the_demo_badge(seeded, client):
    client.force_login(get_user_model().objects.get(username="admin"))
    page = client.get("/benchmarks/vispr-attributes/").content.decode()
    assert page.count(">demo</span>") == 2 and "gpt-5.1" in page and "gemini-3-flash" in page
    run = Run.objects.get(task="vispr-attributes", model_name="gpt-5.1")
    figures = client.get(f"/benchmarks/vispr-attributes/runs/{run.pk}/?format=json").json()
    assert figures["provenance"] == "demo" and 0 < figures["cmap"] <= 1 and figures["evaluated_attributes"] > 3
    assert figures["answered"] < figures["images"] and figures["omitted"] > 0  # seeded refusals and omissions show
    assert ">demo</span>" in client.get(f"/benchmarks/vispr-attributes/runs/{run.pk}/").content.decode()


def test_the_demo_runs_totals_are_their_results_counted_and_claim_no_tokens_or_cost(seeded):
    runs = Run.objects.filter(task="vispr-attributes")
    assert runs.count() == 2
    for run in runs:
        assert stored_totals(run) == counted_totals(run)
        assert run.done == run.total and set(run.outcome_counts) <= {"ok", "refused"}
        # No model was called: a priced model's run shows no tokens and no cost, and stays badged demo.
        assert (run.tokens_in, run.tokens_out, run.estimated_cost_usd) == (0, 0, 0)
        assert run.provenance == "demo"
