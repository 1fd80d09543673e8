"""Batch mode on the launch page, the estimate, the API and the run page (its batches and retry buttons)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from inference import dispatching
from inference.batch import lifecycle
from inference.batch.models import BatchRequest, ProviderBatch
from inference.models import Run
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.conftest import with_submission_token

VALID = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot", "split": "all", "seed": "0",
         "concurrency": "4", "mode": "batch"}


@pytest.fixture
def admin_client(client_as, admin_user):
    return client_as(admin_user)


def test_estimate_shows_both_prices(admin_client, openai_server, images):
    body = admin_client.post(reverse("inference:run_estimate"), VALID).content.decode()
    assert "Online ≈ $" in body and "batch ≈ $" in body and "this run: batch" in body


def test_launch_in_batch_mode_then_the_run_page_shows_batches_and_retry(admin_client, openai_server, images, monkeypatch,
                                                                       django_capture_on_commit_callbacks):
    monkeypatch.setattr(dispatching, "start_batch", lambda run_id: None)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("inference:run_new"), with_submission_token(VALID))
    run = Run.objects.get()
    assert response.status_code == 302 and run.mode == "batch" and run.estimate["mode"] == "batch"
    assert run.estimate["cost_usd"] == run.estimate["cost_batch_usd"] == pytest.approx(run.estimate["cost_online_usd"] / 2, abs=1e-4)
    openai_server.batch_outcomes = {f"run{run.pk}-item{run.image_ids[0]}-judge": "fail"}
    for _ in range(3):
        lifecycle.step(run.pk)
    batch = ProviderBatch.objects.get(run=run)
    page = admin_client.get(reverse("inference:run_detail", args=[run.pk])).content.decode()
    assert batch.provider_batch_id in page and "completed" in page and "Retry in a follow-up batch" in page
    assert "sk-fake" not in page

    bad = admin_client.post(reverse("inference:run_batch_retry", args=[run.pk]), {"how": "sideways"}, follow=True)
    assert "Retry how?" in bad.content.decode() and BatchRequest.objects.filter(state="failed").count() == 1
    with django_capture_on_commit_callbacks(execute=False):
        admin_client.post(reverse("inference:run_batch_retry", args=[run.pk]), {"how": "online"})
    assert BatchRequest.objects.get(run=run, image_id=run.image_ids[0]).state == BatchRequest.ONLINE


def test_launch_refuses_an_unknown_mode(admin_client, openai_server, images):
    response = admin_client.post(reverse("inference:run_new"), with_submission_token({**VALID, "mode": "carrier-pigeon"}))
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode() and not Run.objects.exists()


def test_api_launches_in_batch_mode(admin_client, openai_server, images, monkeypatch):
    monkeypatch.setattr(dispatching, "start_batch", lambda run_id: None)
    body = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot", "concurrency": 4, "mode": "batch"}
    response = admin_client.post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["mode"] == "batch" and Run.objects.get().mode == "batch"
    refused = admin_client.post("/api/runs/", {**body, "mode": 3}, content_type="application/json")
    assert refused.status_code == 400 and Run.objects.count() == 1


def test_batch_mode_is_refused_for_runs_on_anonymized_images(admin_client, openai_server, images):
    from annotations.faces.models import FaceVariant

    FaceVariant.objects.create(image=images[0], file="variant.png", width=1, height=1, sha256="0" * 64, detector="test",
                               method="blur", threshold=0.5, margin=0.2)
    response = admin_client.post(reverse("inference:run_new"), with_submission_token({**VALID, "face_variant": "blur:0.5:0.2"}))
    assert response.status_code == 400 and "online only" in response.content.decode() and not Run.objects.exists()
