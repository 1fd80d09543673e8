"""An export launched through the page is built by a real Celery worker process and downloaded."""
from __future__ import annotations

import io
import zipfile

import pytest
from django.urls import reverse

from scoring.models import ExportJob
from tests.conftest import with_submission_token
from tests.support.exports import build_world
from tests.support.workers import celery_worker, purge_broker, wait_for


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_export_launched_from_the_page_is_built_by_a_real_worker(client, admin_user, make_image, set_labels, settings, monkeypatch, tmp_path):
    root = tmp_path / "exports"
    monkeypatch.setenv("CPRT_EXPORT_ROOT", str(root))  # the worker process reads it from its environment
    settings.CPRT_EXPORT_ROOT = root
    settings.CPRT_PROTECTED_ROOTS = {**settings.CPRT_PROTECTED_ROOTS, "exports": root}
    world = build_world(make_image, set_labels)
    purge_broker()
    client.force_login(admin_user)
    data = {"splits": ["train", "test"], "profile": world["profile"].pk, "destination": "zip", "include_annotations": "on", "include_images": "on"}
    with celery_worker(queues="default", concurrency=1):
        response = client.post(reverse("scoring:exports"), with_submission_token(data))
        assert response.status_code == 302
        job = ExportJob.objects.get()
        assert job.status == "queued"  # the request only stored and dispatched it
        wait_for(lambda: ExportJob.objects.get(pk=job.pk).status in ("finished", "failed"), timeout=120, what="the worker to build the export")
    job.refresh_from_db()
    assert job.status == "finished", job.error
    assert job.done == job.total == 20
    page = client.get(reverse("scoring:export_progress", kwargs={"job_id": job.pk})).content.decode()
    assert "hx-trigger" not in page and "finished" in page
    response = client.get(reverse("scoring:export_download", kwargs={"job_id": job.pk}))
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-store"
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        names = sorted(n.split("/", 1)[1] for n in archive.namelist())
    assert names == ["README.md", "annotations/test.parquet", "annotations/train.parquet", "data/test.parquet", "data/train.parquet",
                     "images/test.parquet", "images/train.parquet", "predictions/test.parquet", "predictions/train.parquet"]
