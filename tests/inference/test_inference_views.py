"""Run pages: launch form validation and estimate, list and detail with live progress, cancel, resume."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from core.models import AuditEvent
from inference import dispatching, execution, launching, prompts
from inference.models import Run
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.conftest import with_submission_token

VALID = {
    "task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "prompt_version": "",
    "split": "all", "concurrency": "4", "seed": "0", "action": "launch",
}


@pytest.fixture
def admin_client(client_as, admin_user):
    return client_as(admin_user)


def test_launch_form_shows_unavailable_providers_with_reason(admin_client, no_provider_keys):
    page = admin_client.get(reverse("inference:run_new")).content.decode()
    assert "OPENAI_API_KEY is not set" in page and "GEMINI_API_KEY is not set" in page and "VLLM_BASE_URL is not set" in page
    assert re.search(r'value="openai"[^>]*disabled', page)
    assert "no provider that runs it is available" in page  # and the Launch button says so instead of failing later


def test_launch_creates_a_run_and_dispatches_on_commit(admin_client, openai_server, images, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None: sent.append(run_id) or 1)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("inference:run_new"),
                                     with_submission_token({**VALID, "counterfactual_faces": "on", "sample_size": "3", "seed": "5"}))
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("inference:run_detail", args=[run.pk])
    assert sent == [run.pk]
    assert (run.task, run.provider, run.strategy, run.counterfactual_faces, run.prompt_version) == ("judge", "openai", "taxonomy", True, "judge-v2")
    assert len(run.image_ids) == 3 and run.selection["sample_size"] == 3 and run.selection["seed"] == 5
    assert AuditEvent.objects.filter(action="run.launch", actor__username="admin").exists()
    assert "sk-fake" not in str(run.prompt_text) + str(run.request_params) + str(run.selection)


INVALID = [
    ({"provider": "gemini"}, "Google Gemini is unavailable"),
    ({"strategy": "wild"}, "Select a valid choice"),
    ({"task": "annotate"}, "Annotate runs take no strategy"),
    ({"task": "annotate", "strategy": "", "counterfactual_faces": "on"}, "judge runs only"),
    ({"prompt_version": "annotate-v1"}, "is not a judge prompt"),
    ({"model_name": "gpt 5; rm -rf"}, "Letters, digits"),
    ({"model_name": ""}, "This field is required."),
    ({"concurrency": "0"}, "greater than or equal to 1"),
    ({"concurrency": "100000"}, "less than or equal to 256"),
    ({"provider": "anthropic"}, "Select a valid choice"),
    ({"attribute": "biometrics"}, "Say which consensus value"),
    ({"attribute": "not_a_key", "attribute_value": "1"}, "Select a valid choice"),
    ({"min_score": "0.8"}, "A minimum score needs the run"),
    ({"from_run": "4242"}, "There is no run #4242."),
    ({"min_score": "1.5", "from_run": "1"}, "less than or equal to 1"),
    ({"split": "validation"}, "Select a valid choice"),
    ({"split": "other"}, "The selection matches no images"),
    ({"sample_size": "-3"}, "greater than or equal to 1"),
]


@pytest.mark.parametrize("change,message", INVALID, ids=[m for _, m in INVALID])
def test_launch_form_refuses_bad_input_and_stores_nothing(admin_client, openai_server, images, change, message):
    before = AuditEvent.objects.count()
    response = admin_client.post(reverse("inference:run_new"), with_submission_token({**VALID, **change}))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Run.objects.count() == 0 and AuditEvent.objects.count() == before


def test_estimate_partial_counts_requests_and_cost(admin_client, openai_server, images):
    response = admin_client.post(reverse("inference:run_estimate"), {**VALID, "task": "annotate", "strategy": ""}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert "5 images · 10 requests" in body and "≈ $" in body
    assert Run.objects.count() == 0
    bad = admin_client.post(reverse("inference:run_estimate"), {**VALID, "strategy": "wild"}).content.decode()
    assert "Fix the form" in bad


def test_estimate_button_without_javascript(admin_client, openai_server, images):
    body = admin_client.post(reverse("inference:run_new"), with_submission_token({**VALID, "action": "estimate"})).content.decode()
    assert "5 images · 5 requests" in body and Run.objects.count() == 0


def _finished_run_with_results(openai_server, django_capture_on_commit_callbacks):
    from tests.fakes import openai_server as ofake

    openai_server.queue(ofake.ok("not json at all"), ofake.refusal("no can do"))
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, "judge-v1", launching.Selection(), 1))
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    return run


def test_run_detail_shows_counts_failures_with_raw_and_predictions(admin_client, openai_server, images, django_capture_on_commit_callbacks):
    run = _finished_run_with_results(openai_server, django_capture_on_commit_callbacks)
    body = admin_client.get(reverse("inference:run_detail", args=[run.pk])).content.decode()
    assert "Failures (2)" in body and "Predictions (3)" in body
    assert f"Run #{run.pk}: judge severity" in body  # the kind's label (inference.kinds) heads the page
    assert "not json at all" in body and "no can do" in body  # raw outputs of failures
    assert "hx-trigger" not in body  # finished: no polling
    assert run.prompt_text["judge"]["user"][:60] in body
    listing = admin_client.get(reverse("inference:run_list")).content.decode()
    assert f'href="{reverse("inference:run_detail", args=[run.pk])}"' in listing


def test_active_runs_poll_and_show_progress(admin_client, openai_server, images, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, "judge-v1", launching.Selection(), 1))
    execution.run_chunk(run.pk, run.image_ids[:2])
    progress = admin_client.get(reverse("inference:run_progress", args=[run.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in progress and '<progress value="2" max="5">' in progress
    rows = admin_client.get(reverse("inference:run_list_rows")).content.decode()
    assert 'hx-trigger="every 2s"' in rows and "2/5" in rows


def test_cancel_and_resume_buttons(admin_client, openai_server, images, django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None, **options: sent.append((run_id, image_ids)) or 1)
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, "judge-v1", launching.Selection(), 1))
    response = admin_client.post(reverse("inference:run_cancel", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == Run.STATUS_CANCELLED
    again = admin_client.post(reverse("inference:run_cancel", args=[run.pk]), follow=True).content.decode()
    assert "nothing to cancel" in again
    with django_capture_on_commit_callbacks(execute=True):
        partial = admin_client.post(reverse("inference:run_resume", args=[run.pk]), HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and 'id="run-progress"' in partial.content.decode()
    assert sent[-1] == (run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_QUEUED


def test_resume_is_refused_while_workers_are_alive(admin_client, openai_server, images, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, "judge-v1", launching.Selection(), 1))
    body = admin_client.post(reverse("inference:run_resume", args=[run.pk]), follow=True).content.decode()
    assert "nothing to resume" in body
    assert not AuditEvent.objects.filter(action="run.resume").exists()


def test_prompts_page_lists_every_version_and_strategy(admin_client, no_provider_keys):
    body = admin_client.get(reverse("inference:prompts")).content.decode()
    import html

    body = html.unescape(body)
    for version in ("judge-v1", "judge-v2"):
        for title in (" · zero_shot", " · intuition", " · taxonomy + counterfactual_faces"):
            assert prompts.version_label(version) + title in body
    for version in ("annotate-v1", "annotate-v2"):
        assert prompts.version_label(version) + " · two-stage annotation" in body
    assert "judge-v1 (older:" in body and "annotate-v2 (current)" in body
    assert "OPENAI_API_KEY is not set" in body


def test_nav_link_only_for_admins(client_as, admin_user, reviewer_a):
    runs = reverse("inference:run_list")
    assert runs in client_as(admin_user).get(reverse("home")).content.decode()
    assert runs not in client_as(reviewer_a).get(reverse("home")).content.decode()
