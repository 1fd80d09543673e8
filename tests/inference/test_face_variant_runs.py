"""Judge runs on face-anonymized variants (the pixel-level counterfactual) through the fake OpenAI server
and the real SDK: the variant is recorded with the run, the model receives the variant's bytes, and the
three-way comparison page shows the original, prompt-level and pixel-level conditions."""
from __future__ import annotations

import base64

import pytest

from annotations.faces import jobs
from annotations.faces.models import FaceVariant
from core.models import AuditEvent
from inference import launching, prompts
from inference.forms import LaunchForm
from inference.models import Run
from inference.selection import Selection
from tests.support import faces as photos
from tests.fakes.fixtures import *  # noqa: F401,F403

SETTING = {"method": "blur", "threshold": 0.5, "margin": 0.2}


def spec(cf=False, face_variant=None):
    return launching.LaunchSpec(
        task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", counterfactual_faces=cf,
        prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(split="test"), concurrency=2,
        face_variant=face_variant or {},
    )


@pytest.fixture
def anonymized(db, make_image):
    images = [photos.store("2017_run_astro", photos.encoded(photos.astronaut())),
              photos.store("2017_run_coffee", photos.encoded(photos.coffee())),
              make_image("2017_run_plain", color=(90, 120, 150))]
    job = jobs.start_job(None, dispatch_task=False, **SETTING)
    assert jobs.run_job(job.pk)["status"] == "finished"
    return images


def _sent_images(server) -> list[bytes]:
    out = []
    for request in server.requests:
        for message in request["json"]["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part.get("type") == "image_url":
                    out.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return out


def test_a_judge_run_on_variants_records_the_setting_and_sends_the_variant_bytes(
        openai_server, anonymized, admin_user, adjudicator, client_as, django_capture_on_commit_callbacks, eager_celery):
    with django_capture_on_commit_callbacks(execute=True):
        original = launching.launch_run(admin_user, spec())
    with django_capture_on_commit_callbacks(execute=True):
        prompt_level = launching.launch_run(admin_user, spec(cf=True))
    openai_server.requests.clear()
    with django_capture_on_commit_callbacks(execute=True):
        pixel_level = launching.launch_run(admin_user, spec(face_variant=SETTING))
    for run in (original, prompt_level, pixel_level):
        run.refresh_from_db()
        assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 3}
    assert pixel_level.face_variant == SETTING and original.face_variant == {}
    assert AuditEvent.objects.get(action="run.launch", target_id=str(pixel_level.pk)).data["face_variant"] == SETTING
    variant_bytes = set()
    for v in FaceVariant.objects.all():
        with v.file.storage.open(v.file.name, "rb") as fh:
            variant_bytes.add(fh.read())
    sent = _sent_images(openai_server)
    assert len(sent) == 3 and set(sent) == variant_bytes
    astro = anonymized[0]
    with astro.file.storage.open(astro.file.name, "rb") as fh:
        assert fh.read() not in sent  # the model never saw the face
    # The scores differ where the pixels differ (the fake scores by the bytes it receives).
    scores = {r.pk: dict(r.results.values_list("image_id", "score")) for r in (original, pixel_level)}
    assert scores[original.pk][astro.pk] != scores[pixel_level.pk][astro.pk]

    client = client_as(admin_user)
    assert "on anonymized images: blur" in client.get(f"/runs/{pixel_level.pk}/").content.decode()
    assert "on anonymized images: blur" in client.get(f"/scoring/runs/{pixel_level.pk}/").content.decode()
    assert client.get(f"/api/runs/{pixel_level.pk}/").json()["face_variant"] == SETTING

    page = client_as(adjudicator).get("/scoring/counterfactual/three-way/")
    assert f"?original={original.pk}&amp;prompt={prompt_level.pk}&amp;pixel={pixel_level.pk}" in page.content.decode()
    page = client_as(adjudicator).get(f"/scoring/counterfactual/three-way/?original={original.pk}&prompt={prompt_level.pk}&pixel={pixel_level.pk}")
    html = page.content.decode()
    assert page.status_code == 200
    assert "3 images scored by all three runs" in html
    for label in (f"original (#{original.pk})", f"prompt-level (#{prompt_level.pk})", f"pixel-level (#{pixel_level.pk})"):
        assert label in html
    variant = FaceVariant.objects.get(image=astro)
    assert f"/faces/variants/{variant.pk}/bytes" in html and f"/images/{astro.pk}/bytes" in html
    assert "faces (detector)" in html


def test_launch_refuses_when_an_image_has_no_variant_and_changes_nothing(openai_server, anonymized, make_image):
    make_image("2017_run_not_anonymized", color=(1, 1, 1))
    with pytest.raises(ValueError, match=r"1 of the 4 selected images have no anonymized variant \(faces blur, threshold 0.5, margin 0.2\)"):
        launching.launch_run(None, spec(face_variant=SETTING))
    assert not Run.objects.exists()


def test_launch_form_offers_the_settings_and_refuses_bad_ones(openai_server, anonymized):
    base = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot", "split": "test", "concurrency": 2}
    form = LaunchForm(base)
    assert ("blur:0.5:0.2", "anonymized: faces blur, threshold 0.5, margin 0.2 (3 images)") in form.fields["face_variant"].choices
    form = LaunchForm({**base, "face_variant": "blur:0.5:0.2"})
    assert form.is_valid(), form.errors
    assert form.spec().face_variant == SETTING
    assert not LaunchForm({**base, "face_variant": "fill:0.5:0.2"}).is_valid()  # no such variants
    annotate = LaunchForm({**base, "task": "annotate", "strategy": "", "face_variant": "blur:0.5:0.2"})
    assert not annotate.is_valid() and "judged only" in str(annotate.errors["face_variant"])


def test_api_launch_with_a_variant_and_a_bad_one(openai_server, anonymized, admin_user, client_as, django_capture_on_commit_callbacks, eager_celery):
    client = client_as(admin_user)
    body = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot", "split": "test", "concurrency": 2}
    bad = client.post("/api/runs/", {**body, "face_variant": "smudge:0.5:0.2"}, content_type="application/json")
    assert bad.status_code == 400 and "face_variant" in bad.json() and not Run.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        ok = client.post("/api/runs/", {**body, "face_variant": "blur:0.5:0.2"}, content_type="application/json")
    assert ok.status_code == 201 and ok.json()["face_variant"] == SETTING
