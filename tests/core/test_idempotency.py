"""Launches happen once (core.idempotency): a form's one-time submission token and the API's
Idempotency-Key header make every replay, concurrent ones included, answer with the first job.

The concurrent tests send 5 requests at once from 5 threads (each with its own database connection,
so `transactional_db`: every thread sees what the others commit) against the real views; without the
protection each of them launched a job of its own.
"""
from __future__ import annotations

import json
import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotations.faces.models import AnonymizationJob
from core.idempotency import KEEP
from core.models import AuditEvent, IdempotencyKey
from inference.models import Run
from scoring.models import ExportJob
from tests.conftest import make_user
from tests.support.exports import build_world
from tests.support.workers import purge_broker

FAKE_KEY = "sk-fake-test-key-not-a-secret"
RUN = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "split": "test", "concurrency": 2}
ANONYMIZE = {"split": "test", "method": "fill", "threshold": 0.5, "margin": 0.2}
TOKEN = "x" * 8 + "0123456789abcdefghijKLMN_-"


@pytest.fixture
def world(make_image, set_labels, settings):
    settings.OPENAI_API_KEY = FAKE_KEY
    built = build_world(make_image, set_labels)
    yield built
    purge_broker()  # the one launched job of each test was dispatched; no worker must ever see it


def launched(model):
    """The jobs that requests launched (the world's own judge run has no creator)."""
    return model.objects.exclude(created_by=None)


def page_forms(world) -> dict:
    """URL name -> (the form's fields as a browser posts them, the job model it launches)."""
    return {
        "inference:run_new": ({**{k: str(v) for k, v in RUN.items()}, "prompt_version": "", "seed": "0", "action": "launch"}, Run),
        "scoring:exports": ({"splits": ["test"], "profile": str(world["profile"].pk), "destination": "zip", "include_annotations": "on"},
                            ExportJob),
        "scoring:export_sft": ({"sft-format": "hf", "sft-prompt_version": "judge-v1", "sft-split": "train", "sft-faces": "original",
                                "sft-profile": str(world["profile"].pk)}, ExportJob),
        "faces:jobs": ({k: str(v) for k, v in ANONYMIZE.items()}, AnonymizationJob),
    }


API = {"api:run-list": (RUN, Run), "api:anonymization-list": (ANONYMIZE, AnonymizationJob)}


def at_once(n: int, prepare, send) -> list:
    """`prepare(i)` in each of n threads, then `send(prepared)` in all of them at the same moment."""
    barrier, results, errors = threading.Barrier(n), [None] * n, []

    def work(i):
        try:
            prepared = prepare(i)
            barrier.wait(timeout=30)
            results[i] = send(prepared)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def token_form(client, name: str) -> str:
    """The submission token of the launch form on the page that shows it (GET)."""
    page = {"scoring:export_sft": "scoring:exports"}.get(name, name)
    html = client.get(reverse(page)).content.decode()
    action = reverse(name)
    form = html[html.index(f'action="{action}"'):]
    return re.search(r'name="submission_token" value="([^"]+)"', form[:form.index("</form>")]).group(1)


# ---------------------------------------------------------------------------------------------
# Pages: the one-time submission token


# Committed rows, so a flush at the end; serialized_rollback restores the migrations' data (the taxonomy) after it.
concurrent = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@concurrent
@pytest.mark.slow
@pytest.mark.parametrize("name", ["inference:run_new", "scoring:exports", "scoring:export_sft", "faces:jobs"])
def test_five_concurrent_submissions_of_one_form_launch_one_job(world, admin_user, name):
    data, model = page_forms(world)[name]
    token = token_form(logged_in(admin_user), name)
    responses = at_once(5, lambda i: logged_in(admin_user), lambda client: client.post(reverse(name), {**data, "submission_token": token}))
    job = launched(model).get()  # exactly one
    assert [r.status_code for r in responses] == [302] * 5
    assert {r["Location"] for r in responses} == {r["Location"] for r in responses[:1]} and str(job.pk) in responses[0]["Location"]
    assert AuditEvent.objects.filter(action__endswith=".launch").count() == 1


def test_a_resubmitted_form_goes_to_the_job_it_launched_and_says_so(world, admin_user, client_as):
    client = client_as(admin_user)
    token = token_form(client, "inference:run_new")
    data = {**page_forms(world)["inference:run_new"][0], "submission_token": token}
    first = client.post(reverse("inference:run_new"), data)
    again = client.post(reverse("inference:run_new"), {**data, "sample_size": "1"}, follow=True)
    run = launched(Run).get()
    assert first.status_code == 302 and again.redirect_chain == [(first["Location"], 302)]
    assert "already been submitted" in again.content.decode() and run.total_images == 3  # the first submission's selection
    assert token_form(client, "inference:run_new") != token  # the form, shown again, can launch another run
    assert client.post(reverse("inference:run_new"), {**data, "submission_token": token_form(client, "inference:run_new")}).status_code == 302
    assert launched(Run).count() == 2


def test_a_refused_submission_keeps_nothing_and_the_corrected_form_launches(world, admin_user, client_as):
    client = client_as(admin_user)
    data = {**page_forms(world)["inference:run_new"][0], "submission_token": TOKEN}
    refused = client.post(reverse("inference:run_new"), {**data, "concurrency": "0"})
    estimate = client.post(reverse("inference:run_new"), {**data, "action": "estimate"})
    assert (refused.status_code, estimate.status_code) == (400, 200) and not launched(Run).exists() and not IdempotencyKey.objects.exists()
    assert client.post(reverse("inference:run_new"), data).status_code == 302 and launched(Run).count() == 1


@pytest.mark.parametrize("name", ["inference:run_new", "scoring:export_sft", "faces:jobs", "scoring:exports"])
def test_a_form_posted_without_its_token_launches_nothing_and_a_replay_launches_once(world, admin_user, client_as, name):
    """A script posting the page form (no hidden token) is refused every time; the page's own form,
    sent twice with its token (a double click, a browser resending it), launches one job."""
    data, model = page_forms(world)[name]
    client = client_as(admin_user)
    for _ in range(3):
        refused = client.post(reverse(name), data)
        assert refused.status_code == 400 and "without its submission token" in refused.content.decode()
    assert not launched(model).exists() and not IdempotencyKey.objects.exists()
    token = token_form(client, name)
    first, again = (client.post(reverse(name), {**data, "submission_token": token}) for _ in range(2))
    job = launched(model).get()
    assert (first.status_code, again.status_code) == (302, 302) and first["Location"] == again["Location"]
    assert str(job.pk) in first["Location"]


@pytest.mark.parametrize("token", ["short", "x" * 129, "spaces are not allowed in it", "é" * 20])
def test_a_malformed_token_is_refused_and_launches_nothing(world, admin_user, client_as, token):
    response = client_as(admin_user).post(reverse("inference:run_new"), {**page_forms(world)["inference:run_new"][0], "submission_token": token})
    assert response.status_code == 400 and "submission token is malformed" in response.content.decode()
    assert not launched(Run).exists() and not IdempotencyKey.objects.exists()


def test_tokens_are_per_user_and_per_form(world, admin_user, client_as):
    other = make_user("admin2", "admin", superuser=True)
    forms = page_forms(world)
    for user in (admin_user, other):
        for name in ("scoring:exports", "scoring:export_sft"):
            assert client_as(user).post(reverse(name), {**forms[name][0], "submission_token": TOKEN}).status_code == 302
    assert launched(ExportJob).count() == 4


# ---------------------------------------------------------------------------------------------
# API: the Idempotency-Key header


def api_client(user, key: str | None = None) -> Client:
    headers = {"Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return Client(headers=headers)


def post_json(client, name: str, body: dict):
    return client.post(reverse(name), json.dumps(body), content_type="application/json")


@concurrent
@pytest.mark.slow
@pytest.mark.parametrize("name", list(API))
def test_five_concurrent_calls_with_one_key_launch_one_job(world, admin_user, name):
    body, model = API[name]
    responses = at_once(5, lambda i: api_client(admin_user, "launch-7f3a"), lambda client: post_json(client, name, body))
    job = launched(model).get()
    assert [r.status_code for r in responses] == [201] * 5 and {r.json()["id"] for r in responses} == {job.pk}
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in responses) == [""] + ["true"] * 4
    assert len({r.content for r in responses}) == 1  # the first answer, byte for byte


@pytest.mark.parametrize("name", list(API))
def test_a_replay_gets_the_first_answer_and_another_body_a_422(world, admin_user, name):
    body, model = API[name]
    client = api_client(admin_user, "4f1c2b8e-6a0d-4d5e-9a77-1f0c3b2a9e11")
    first = post_json(client, name, body)
    replay = post_json(client, name, dict(reversed(list(body.items()))))  # the same JSON, keys in another order
    other = post_json(client, name, {**body, "split": "train"})
    assert first.status_code == replay.status_code == 201 and replay.json() == first.json() and replay["Idempotent-Replayed"] == "true"
    assert other.status_code == 422 and "different request body" in other.json()["detail"]
    assert launched(model).count() == 1
    assert post_json(api_client(admin_user), name, body).status_code == 201 and launched(model).count() == 2  # no key: no protection


@pytest.mark.parametrize("key", ["", "x" * 129, "with space", "tab\tin", "é"])
def test_a_malformed_key_is_refused_and_launches_nothing(world, admin_user, key):
    response = post_json(api_client(admin_user, key), "api:run-list", RUN)
    assert response.status_code == 400 and "Idempotency-Key header must be 1 to 128 visible ASCII" in response.json()["detail"]
    assert not launched(Run).exists() and not IdempotencyKey.objects.exists()


def test_keys_are_per_user_and_endpoint_and_a_refusal_keeps_nothing(world, admin_user):
    other = make_user("admin2", "admin", superuser=True)
    refused = post_json(api_client(admin_user, "k1"), "api:run-list", {**RUN, "concurrency": 0})
    assert refused.status_code == 400 and not IdempotencyKey.objects.exists()
    assert post_json(api_client(admin_user, "k1"), "api:run-list", RUN).status_code == 201  # the same key, corrected
    assert post_json(api_client(other, "k1"), "api:run-list", RUN).status_code == 201
    assert post_json(api_client(admin_user, "k1"), "api:anonymization-list", ANONYMIZE).status_code == 201
    assert launched(Run).count() == 2 and launched(AnonymizationJob).count() == 1


def test_keys_are_kept_24_hours(world, admin_user):
    client = api_client(admin_user, "daily-launch")
    first = post_json(client, "api:run-list", RUN).json()
    IdempotencyKey.objects.update(created_at=timezone.now() - KEEP + timedelta(minutes=1))
    assert post_json(client, "api:run-list", RUN).json()["id"] == first["id"]
    IdempotencyKey.objects.update(created_at=timezone.now() - KEEP - timedelta(minutes=1))
    assert post_json(client, "api:run-list", RUN).json()["id"] != first["id"] and launched(Run).count() == 2
    assert IdempotencyKey.objects.count() == 1  # the expired one was deleted


def test_the_schema_documents_the_header_and_the_422_on_launches_only(admin_user):
    schema = api_client(admin_user).get(reverse("api:schema") + "?format=json").json()
    for path in ("/api/runs/", "/api/anonymizations/"):
        post = schema["paths"][path]["post"]
        header = next(p for p in post["parameters"] if p["name"] == "Idempotency-Key")
        assert header["in"] == "header" and not header.get("required") and header["schema"]["maxLength"] == 128
        assert "422" in post["responses"] and "24 hours" in header["description"]
    cancel = schema["paths"]["/api/runs/{run_id}/cancel/"]["post"]
    assert "422" not in cancel["responses"] and all(p["name"] != "Idempotency-Key" for p in cancel.get("parameters", []))
