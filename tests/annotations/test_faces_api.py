"""The face-anonymization jobs over the REST API: launch, follow, cancel, resume, with the page's rules;
bad input is refused with a message and stores nothing."""
from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.faces import jobs
from annotations.faces.models import AnonymizationJob, FaceVariant
from core.models import AuditEvent
from tests.support import faces as photos
from tests.support.dispatch import record_sends

LIST = "/api/anonymizations/"


@pytest.fixture
def photo(db):
    return photos.store("2017_api_astro", photos.encoded(photos.astronaut()))


@pytest.fixture
def staff_api(adjudicator):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=adjudicator).key}")
    return client


def test_launch_follow_and_finish(staff_api, photo, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api.post(LIST, {"split": "test", "method": "pixelate", "threshold": 0.5, "margin": 0.1}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["setting"], body["total"], body["done"]) == ("queued", "pixelate:0.5:0.1", 1, 0)
    assert sent == [("annotations.anonymize_faces", [body["id"]])]  # dispatched on commit, run by a worker (never inside the request)
    assert jobs.run_job(body["id"])["status"] == "finished"
    detail = staff_api.get(f"{LIST}{body['id']}/").json()
    assert (detail["status"], detail["done"], detail["faces"], detail["percent_done"], detail["can_resume"]) == ("finished", 1, 1, 100, False)
    assert FaceVariant.objects.filter(job_id=body["id"], method="pixelate", margin=0.1).count() == 1
    listed = staff_api.get(LIST).json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == body["id"]


def test_defaults_are_the_pages(staff_api, photo, monkeypatch):
    record_sends(monkeypatch)
    body = staff_api.post(LIST, {"method": "blur"}, format="json").json()
    assert (body["split"], body["threshold"], body["margin"]) == ("", 0.5, 0.2)


@pytest.mark.parametrize("payload,field,message", [
    ({"method": "smudge"}, "method", "blur, pixelate or fill"),
    ({"method": "blur", "threshold": 2}, "threshold", "between 0.01 and 0.99"),
    ({"method": "blur", "threshold": "0.5"}, "threshold", "valid number"),
    ({"method": "blur", "margin": -0.1}, "margin", "between 0 and 1"),
    ({"method": "blur", "split": "bogus"}, "split", "split that has images"),
    ({"method": "blur", "colour": "red"}, "non_field_errors", "Unknown field(s): colour"),
    ({"split": "test"}, "method", "required"),
    ({"method": "blur", "split": "train"}, "split", "split that has images"),  # no train images here
])
def test_bad_input_is_refused_and_stores_nothing(staff_api, photo, payload, field, message):
    response = staff_api.post(LIST, payload, format="json")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])
    assert AnonymizationJob.objects.count() == 0 and not AuditEvent.objects.filter(action="faces.launch").exists()


def test_no_images_at_all_is_refused(staff_api, db):
    response = staff_api.post(LIST, {"method": "blur"}, format="json")
    assert response.status_code == 400 and "No images with a stored file" in response.json()["non_field_errors"][0]
    assert AnonymizationJob.objects.count() == 0


def test_cancel_and_resume(staff_api, photo, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    job = jobs.start_job(None, dispatch_task=False)
    cancelled = staff_api.post(f"{LIST}{job.pk}/cancel/", {}, format="json")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled" and cancelled.json()["can_resume"]
    assert staff_api.post(f"{LIST}{job.pk}/cancel/", {}, format="json").status_code == 409
    with_body = staff_api.post(f"{LIST}{job.pk}/resume/", {"now": True}, format="json")
    assert with_body.status_code == 400 and AnonymizationJob.objects.get(pk=job.pk).status == "cancelled"
    with django_capture_on_commit_callbacks(execute=True):
        resumed = staff_api.post(f"{LIST}{job.pk}/resume/", {}, format="json")
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"
    assert sent == [("annotations.anonymize_faces", [job.pk])]  # the resume sent it again, by name
    jobs.run_job(job.pk)
    refused = staff_api.post(f"{LIST}{job.pk}/resume/", {}, format="json")
    assert refused.status_code == 409 and "nothing to resume" in refused.json()["detail"]
    assert [e for e in AuditEvent.objects.filter(target_type="AnonymizationJob").values_list("action", flat=True).order_by("id")] == [
        "faces.launch", "faces.cancel", "faces.resume", "faces.finished"]
