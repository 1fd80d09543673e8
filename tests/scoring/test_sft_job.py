"""The SFT export from the browser: the form on the exports page, the job on the export machinery
(run through the same task path, and by a real worker), progress, the zip, and refusals."""
from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.urls import reverse

from annotations.models import Image
from core.models import AuditEvent
from scoring import exports
from scoring.models import ExportJob
from scoring.tasks import run_export as run_export_task
from tests.scoring.conftest import SFT_TEST, SFT_TRAIN
from tests.support.workers import celery_worker, purge_broker, wait_for
from tests.support.dispatch import record_sends
from tests.conftest import with_submission_token

DEFAULTS = {"sft-format": "hf", "sft-prompt_version": "judge-v1", "sft-split": "train", "sft-faces": "original"}


def zip_names(client, job) -> list[str]:
    response = client.get(reverse("scoring:export_download", kwargs={"job_id": job.pk}))
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-store"
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        return sorted(n.split("/", 1)[1] for n in archive.namelist())


@pytest.mark.django_db
def test_the_exports_page_offers_the_sft_form_with_its_defaults(client_as, admin_user, sft_world):
    sft_world.activate()
    page = client_as(admin_user).get(reverse("scoring:exports")).content.decode()
    assert 'action="/scoring/exports/sft/"' in page and "New fine-tuning export" in page
    assert 'name="sft-format" value="hf"' in page and "checked" in page.split('name="sft-format" value="hf"')[1][:40]
    assert '<option value="train" selected>' in page and '<option value="test"' not in page.split('name="sft-split"')[1].split("</select>")[0]
    assert "the images are privacy-sensitive by design" in page


@pytest.mark.django_db
def test_a_valid_launch_stores_audits_and_dispatches_an_sft_job_on_commit(client_as, admin_user, sft_world, monkeypatch,
                                                                          django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(admin_user).post(reverse("scoring:export_sft"),
                                              with_submission_token({**DEFAULTS, "sft-profile": sft_world.pk, "sft-annotation_stages": "on"}))
    job = ExportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("scoring:export", kwargs={"job_id": job.pk})
    assert (job.kind, job.status, job.splits, job.include_images, job.destination) == ("sft", "queued", ["train", "test"], False, "zip")
    assert job.options == {"format": "hf", "prompt_version": "judge-v1", "split": "train", "faces": "original", "annotation_stages": True}
    assert sent == [("scoring.run_export", [job.pk])]
    event = AuditEvent.objects.get(action="export.launch")
    assert event.data["kind"] == "sft" and event.data["format"] == "hf" and event.actor == admin_user


@pytest.mark.django_db
@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"sft-format": "openai"}, "The openai format embeds every image in the file (as a data URL): include the images to use it."),
        ({"sft-format": "csv"}, "Unknown format csv"),
        ({"sft-split": "test"}, "test cannot be training data: the test split is the evaluation side"),
        ({"sft-prompt_version": "judge-v0"}, "Unknown judge prompt version judge-v0."),
        ({"sft-faces": "blur:0.5:0.2", "sft-include_images": "on"},
         "Unknown faces option blur:0.5:0.2: choose the originals or an anonymization setting"),
        ({"sft-profile": "999999"}, "Unknown scoring profile: choose one of the list."),
    ],
)
def test_bad_input_is_refused_on_the_page_and_stores_nothing(client_as, admin_user, sft_world, monkeypatch, overrides, message):
    from scoring.sft import images as sft_images

    monkeypatch.setattr(sft_images, "face_variants", lambda: None)
    response = client_as(admin_user).post(reverse("scoring:export_sft"),
                                          with_submission_token({**DEFAULTS, "sft-profile": sft_world.pk, **overrides}))
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'")
    assert not ExportJob.objects.exists() and not AuditEvent.objects.filter(action="export.launch").exists()


@pytest.mark.django_db
def test_only_admins_may_launch_and_only_by_post(client_as, reviewer_a, adjudicator, admin_user, sft_world):
    for user in (reviewer_a, adjudicator):
        assert client_as(user).post(reverse("scoring:export_sft"),
                                    with_submission_token({**DEFAULTS, "sft-profile": sft_world.pk})).status_code == 403
    assert client_as(admin_user).get(reverse("scoring:export_sft")).status_code == 405
    assert not ExportJob.objects.exists()


def make_sft_job(profile, **options) -> ExportJob:
    return ExportJob.objects.create(
        kind="sft", options={"format": "llamafactory", "prompt_version": "judge-v1", "split": "train", "faces": "original",
                             "annotation_stages": False, **options},
        splits=["train", "test"], profile=profile, include_images=True,
    )


@pytest.mark.django_db
def test_the_task_builds_the_sft_zip_with_progress_and_the_page_shows_it(client_as, admin_user, sft_world, sft_export_root):
    job = make_sft_job(sft_world)
    assert run_export_task.apply(args=[job.pk]).get() == {"job_id": job.pk, "status": "finished"}  # the task path, eagerly
    job.refresh_from_db()
    assert job.status == "finished", job.error
    assert job.done == job.total == 14 and job.zip_path == f"{job.pk}/cprt-sft-llamafactory-{job.pk}.zip"
    assert job.summary["pairs"] == {"train": 4, "evaluation": 2}
    client = client_as(admin_user)
    names = zip_names(client, job)
    assert names == ["README.md", "cprt_judge_evaluation_test.json", "cprt_judge_train.json", "dataset_info.json",
                     *sorted(f"images/{i}.png" for i in [*SFT_TRAIN, *SFT_TEST])]
    page = client.get(reverse("scoring:export", kwargs={"job_id": job.pk})).content.decode()
    assert "Fine-tuning pairs · format <strong>llamafactory</strong>" in page and "cprt_judge_train.json" in page
    assert f"cprt-sft-llamafactory-{job.pk}.zip" in page
    assert "This export contains the image bytes" in page
    assert AuditEvent.objects.filter(action="export_sft").count() == 1 and AuditEvent.objects.filter(action="export.finished").count() == 1


@pytest.mark.django_db
def test_a_leaking_selection_fails_the_job_with_the_images_named_and_no_file(sft_world, sft_export_root, make_image):
    make_image("2017_299", split="test", color=(10, 90, 200))  # identical bytes to train image 2017_102
    job = make_sft_job(sft_world)
    exports.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.zip_path == ""
    assert job.error.startswith("Refused: 1 image would appear on both the training and the evaluation side")
    assert "2017_102 (train) has the same bytes as 2017_299 (test)" in job.error
    assert not any(p.is_file() for p in sft_export_root.rglob("*"))


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_sft_export_launched_from_the_page_is_built_by_a_real_worker(client, admin_user, make_image, set_labels, model_annotators,
                                                                        settings, monkeypatch, tmp_path):
    from scoring.models import ScoringProfile
    from scoring.services.scores import recompute_scores

    root = tmp_path / "exports"
    monkeypatch.setenv("CPRT_EXPORT_ROOT", str(root))  # the worker process reads it from its environment
    settings.CPRT_EXPORT_ROOT = root
    settings.CPRT_PROTECTED_ROOTS = {**settings.CPRT_PROTECTED_ROOTS, "exports": root}
    profile = ScoringProfile.objects.create(name="sft-worker", lo1=0.75, lo2=0.5, lo3=0.25, source="test", weights=[330, 30, 5, 1])
    profile.consensus_annotators.set(model_annotators)
    for number, (vispr_id, split) in enumerate([("2017_1", "train"), ("2017_2", "train"), ("2017_3", "test")]):
        image = make_image(vispr_id, split=split, color=(30 * number, 10, 10))
        for annotator in model_annotators:
            set_labels(image, annotator, {"age": 1, "biometrics": number % 2})
    recompute_scores(profile)
    purge_broker()
    client.force_login(admin_user)
    with celery_worker(queues="default", concurrency=1):
        response = client.post(reverse("scoring:export_sft"),
                               with_submission_token({**DEFAULTS, "sft-format": "openai", "sft-profile": profile.pk,
                                                      "sft-include_images": "on"}))
        assert response.status_code == 302
        job = ExportJob.objects.get()
        assert job.status == "queued"
        wait_for(lambda: ExportJob.objects.get(pk=job.pk).status in ("finished", "failed"), timeout=120, what="the worker to build the SFT export")
    job.refresh_from_db()
    assert job.status == "finished", job.error
    assert job.done == job.total == 6
    assert zip_names(client, job) == ["README.md", "evaluation-test.jsonl", "train.jsonl"]
    assert Image.objects.count() == 3 and json.loads(json.dumps(job.summary["pairs"])) == {"train": 2, "evaluation": 1}


@pytest.mark.django_db
def test_the_form_offers_the_anonymization_settings_that_have_variants(client_as, admin_user, sft_world, monkeypatch,
                                                                      django_capture_on_commit_callbacks):
    from types import SimpleNamespace

    from scoring.sft import images as sft_images

    fake = SimpleNamespace(available_settings=lambda: [("blur:0.5:0.2", "faces blur, threshold 0.5, margin 0.2 (4 images)", 4)],
                           parse_setting_key=lambda key: {"method": "blur", "threshold": 0.5, "margin": 0.2}, variant_files=lambda ids, s: {})
    monkeypatch.setattr(sft_images, "face_variants", lambda: fake)
    record_sends(monkeypatch)
    client = client_as(admin_user)
    page = client.get(reverse("scoring:exports")).content.decode()
    assert '<option value="blur:0.5:0.2">face-anonymized variants: faces blur, threshold 0.5, margin 0.2 (4 images)</option>' in page
    refused = client.post(reverse("scoring:export_sft"),
                          with_submission_token({**DEFAULTS, "sft-profile": sft_world.pk, "sft-faces": "blur:0.5:0.2"}))
    assert refused.status_code == 400 and "Face-anonymized images only make sense with the images included." in refused.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("scoring:export_sft"),
                    with_submission_token({**DEFAULTS, "sft-profile": sft_world.pk, "sft-faces": "blur:0.5:0.2", "sft-include_images": "on"}))
    job = ExportJob.objects.get()
    assert job.options["faces"] == "blur:0.5:0.2" and job.include_images
    assert job.face_variant == {"method": "blur", "threshold": 0.5, "margin": 0.2}
