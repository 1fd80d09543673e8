"""A run's provenance (the endpoint it sent to, the stand-in badge) and the launch defaults the page and
the API share (the judge strategy, concurrency)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from inference import dispatching, execution, launching
from inference.forms import LaunchForm
from inference.models import Run
from inference.providers.base import endpoint_host
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.conftest import with_submission_token

FORM = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "", "prompt_version": "",
        "split": "all", "concurrency": "4", "seed": "0", "action": "launch"}


@pytest.fixture
def no_dispatch(monkeypatch):
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None, **kw: sent.append(run_id) or 1)
    return sent


@pytest.mark.parametrize("url, host", [
    ("https://user:sk-secret@api.example.com:8443/v1?key=sk-secret", "api.example.com:8443"),
    ("https://api.openai.com/v1", "api.openai.com"),
    ("http://[::1]:9000/v1", "[::1]:9000"),
    ("", ""),
    ("http://[broken", ""),
])
def test_endpoint_is_the_host_only(url, host):
    assert endpoint_host(url) == host


def test_form_launch_takes_the_default_strategy_and_records_the_endpoint(client_as, admin_user, openai_server, images, no_dispatch,
                                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(admin_user).post(reverse("inference:run_new"), with_submission_token(FORM))
    run = Run.objects.get()
    assert response.status_code == 302 and run.strategy == "taxonomy"
    assert run.endpoint == endpoint_host(openai_server.url) and run.endpoint.startswith("127.0.0.1:")
    assert "sk-" not in run.endpoint and not run.stand_in


def test_default_endpoint_is_the_providers_public_host(settings, admin_user, images):
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "sk-test", ""
    form = LaunchForm({**FORM, "concurrency": "2"})
    assert form.is_valid(), form.errors
    run = launching.launch_run(admin_user, form.spec(), send=False)
    assert run.endpoint == "api.openai.com"


def test_annotate_runs_still_refuse_a_strategy(openai_server, images):
    form = LaunchForm({**FORM, "task": "annotate", "strategy": "taxonomy"})
    assert not form.is_valid() and "Annotate runs take no strategy" in str(form.errors)


def test_a_reply_from_the_stand_in_marks_the_run_and_shows_the_badge(client_as, admin_user, openai_server, images):
    form = LaunchForm(FORM)
    assert form.is_valid(), form.errors
    run = launching.launch_run(admin_user, form.spec(), send=False)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.stand_in and run.status == Run.STATUS_FINISHED
    client = client_as(admin_user)
    for url in (reverse("inference:run_detail", args=[run.pk]), reverse("scoring:run", args=[run.pk]), reverse("inference:run_list")):
        assert 'class="badge stand-in"' in client.get(url).content.decode(), url


def test_replies_without_the_mark_leave_the_run_unflagged(client_as, admin_user, openai_server, images):
    # A server that answers like the real API (no stand-in fingerprint).
    def real_like(path, payload, headers):
        reply = openai_server.default_reply(path, payload)
        reply.body.pop("system_fingerprint", None)
        return reply
    openai_server.reply_for = real_like
    form = LaunchForm(FORM)
    assert form.is_valid(), form.errors
    run = launching.launch_run(admin_user, form.spec(), send=False)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and not run.stand_in
    page = client_as(admin_user).get(reverse("inference:run_detail", args=[run.pk])).content.decode()
    assert 'class="badge stand-in"' not in page and f"via {run.endpoint}" in page


def test_the_gemini_stand_in_is_recognised_too(admin_user, gemini_server, images):
    form = LaunchForm({**FORM, "provider": "gemini", "model_name": "gemini-3-flash"})
    assert form.is_valid(), form.errors
    run = launching.launch_run(admin_user, form.spec(), send=False)
    assert run.endpoint == endpoint_host(gemini_server.url)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.stand_in
