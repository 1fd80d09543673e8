"""Export jobs from the browser: the launch form, the job run by the service, progress, failure, the
zip download (the Hub and the secrets scan: test_export_hub.py)."""
from __future__ import annotations

import json

import datasets
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from inference.models import Run
from core.models import AuditEvent
from scoring import cprt_bench, exports
from scoring.models import ExportJob
from tests.support.dispatch import record_sends
from tests.support.exports import HF_TOKEN, load, make_job, unzip
from tests.conftest import with_submission_token


# ---------------------------------------------------------------------------------------------
# Data


def form_data(**overrides) -> dict:
    data = {"splits": ["train", "test"], "destination": "zip", "repo_id": "", "include_annotations": "on"}
    return data | overrides


# ---------------------------------------------------------------------------------------------
# The launch form


@pytest.mark.django_db
@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"splits": ["validation"]}, "splits", "Unknown split validation"),
        ({"splits": ["other"]}, "splits", "Unknown split other"),  # no image is in `other`
        ({"splits": []}, "splits", "Choose at least one split"),
        ({"profile": "999999"}, "profile", "Unknown scoring profile"),
        ({"profile": "not-a-number"}, "profile", "Unknown scoring profile"),
        ({"destination": "ftp"}, "destination", "Unknown destination ftp"),
        ({"destination": "hub", "repo_id": "no-slash"}, "repo_id", "owner/name"),
        ({"destination": "hub", "repo_id": "a/b/c"}, "repo_id", "owner/name"),
        ({"destination": "hub", "repo_id": "-lab/cprt"}, "repo_id", "owner/name"),
        ({"destination": "hub", "repo_id": "lab/cp--rt"}, "repo_id", "owner/name"),
        ({"destination": "hub", "repo_id": ""}, "repo_id", "Name the Hub repository"),
    ],
)
def test_the_form_refuses_bad_input_with_a_message_and_creates_no_job(client_as, admin_user, world, settings, overrides, field, message):
    settings.HF_TOKEN = HF_TOKEN
    data = form_data(profile=str(world["profile"].pk)) | overrides
    response = client_as(admin_user).post(reverse("scoring:exports"), with_submission_token(data))
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert message.split(" %")[0] in response.content.decode()
    assert not ExportJob.objects.exists() and not AuditEvent.objects.filter(action="export.launch").exists()


@pytest.mark.django_db
def test_hub_without_a_token_is_refused_and_nothing_is_stored(client_as, admin_user, world, settings):
    settings.HF_TOKEN = ""
    page = client_as(admin_user).get(reverse("scoring:exports"))
    assert "HF_TOKEN is not set" in page.content.decode()
    data = form_data(profile=str(world["profile"].pk), destination="hub", repo_id="lab/cprt-bench")
    response = client_as(admin_user).post(reverse("scoring:exports"), with_submission_token(data))
    assert response.status_code == 400
    assert "needs HF_TOKEN in the server&#x27;s environment, and it is not set" in response.content.decode()
    assert not ExportJob.objects.exists() and not AuditEvent.objects.filter(action="export.launch").exists()
    with pytest.raises(ValueError, match="HF_TOKEN"):
        exports.start_export(admin_user, {"destination": "hub", "profile": world["profile"], "splits": ["test"]})
    assert not ExportJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_other_methods_than_get_and_post_are_refused(client_as, admin_user, world, method):
    response = getattr(client_as(admin_user), method)(reverse("scoring:exports"))
    assert response.status_code == 405 and response["Allow"] == "GET, POST"
    assert not ExportJob.objects.exists()


@pytest.mark.django_db
def test_the_page_offers_the_existing_splits_and_warns_about_images(client_as, admin_user, world):
    response = client_as(admin_user).get(reverse("scoring:exports"))
    assert response.status_code == 200
    assert [value for value, _ in response.context["form"].fields["splits"].choices] == ["train", "test"]
    html = response.content.decode()
    assert "sensitive" in html and "leave the system" in html
    assert 'name="public"' in html and 'name="public" checked' not in html
    assert reverse("scoring:exports") in client_as(admin_user).get(reverse("home")).content.decode()  # the nav link


@pytest.mark.django_db
@pytest.mark.parametrize("public", [False, True])
def test_a_valid_launch_stores_audits_and_dispatches_the_job_on_commit(
    client_as, admin_user, world, settings, monkeypatch, django_capture_on_commit_callbacks, public
):
    settings.HF_TOKEN = HF_TOKEN
    sent = record_sends(monkeypatch)
    data = form_data(profile=str(world["profile"].pk), destination="hub", repo_id="lab/cprt-bench", splits=["test"])
    if public:
        data["public"] = "on"
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(admin_user).post(reverse("scoring:exports"), with_submission_token(data))
    job = ExportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("scoring:export", kwargs={"job_id": job.pk})
    assert sent == [("scoring.run_export", [job.pk])]  # the task gets the id, after the commit; the request itself ran nothing
    assert (job.status, job.splits, job.profile, job.destination, job.repo_id) == ("queued", ["test"], world["profile"], "hub", "lab/cprt-bench")
    assert job.private is not public and job.include_annotations and not job.include_images and job.created_by == admin_user
    event = AuditEvent.objects.get(action="export.launch")
    assert event.actor == admin_user and event.target_id == str(job.pk) and event.data["private"] is not public
    assert HF_TOKEN not in json.dumps(event.data)


# ---------------------------------------------------------------------------------------------
# The job, run in-process by the service


@pytest.mark.django_db
def test_a_zip_job_runs_end_to_end_and_every_configuration_loads(world, export_root, tmp_path, admin_user):
    # The run's provenance travels with its predictions: where it sent (host only) and that it was a stand-in.
    Run.objects.filter(pk=world["run"].pk).update(endpoint="127.0.0.1:8911", stand_in=True)
    job = make_job(world, created_by=admin_user)
    assert exports.run_export(job.pk) == {"job_id": job.pk, "status": "finished"}
    job.refresh_from_db()
    assert job.status == "finished" and job.error == "" and job.started_at and job.finished_at
    assert job.zip_path == f"{job.pk}/cprt-bench-export-{job.pk}.zip" and (export_root / job.zip_path).is_file()
    assert job.done == job.total == 5 * 4  # four passes over five images: rows, annotations, predictions, images
    assert [p.name for p in (export_root / str(job.pk)).iterdir()] == [job.download_name]  # the working folder is gone
    assert job.summary["splits"]["test"]["rows"] == 3 and job.summary["splits"]["train"]["levels"] == {"1": 1, "2": 0, "3": 1, "4": 0}

    folder = unzip(job, export_root, tmp_path / "unzipped")
    cache = tmp_path / "cache"
    default = load(folder, "default", cache)
    assert {s: len(default[s]) for s in default} == {"train": 2, "test": 3}
    annotations = load(folder, "annotations", cache)
    names = set(annotations["train"]["annotator"]) | set(annotations["test"]["annotator"])
    assert names == {world["gpt"].name, world["gemini"].name, *(f"human-{h.pk}" for h in world["humans"])}
    by = {(r["id"], r["annotator"]): r for r in annotations["train"]}
    assert by[("2017_00000", world["gpt"].name)]["rationales"]["biometrics"] == "A clear frontal face."
    assert by[("2017_00000", f"human-{world['humans'][0].pk}")]["labels"]["age"] == 0.5
    predictions = load(folder, "predictions", cache)
    rows = sorted(list(predictions["train"]) + list(predictions["test"]), key=lambda r: r["id"])
    assert [(r["id"], r["run_id"], r["outcome"], r["predicted_score"], r["predicted_level"]) for r in rows] == [
        ("2017_00000", world["run"].pk, "ok", 0.91, 1), ("2017_00002", world["run"].pk, "ok", 0.42, 3),
        ("2017_00003", world["run"].pk, "refused", None, None),
    ]
    assert rows[0]["provider"] == "openai" and rows[0]["model_name"] == "gpt-5.1" and rows[0]["strategy"] == "taxonomy"
    assert rows[0]["prompt_version"] == "judge-v1" and rows[0]["counterfactual_faces"] is False
    assert all(r["endpoint"] == "127.0.0.1:8911" and r["stand_in"] is True and r["provenance"] == "stand-in" for r in rows)
    images = load(folder, "images", cache)
    assert isinstance(images["test"].features["image"], datasets.Image)
    stored = {i.vispr_id: i for i in world["images"]}
    for split in ("train", "test"):
        for row in images[split]:
            image = stored[row["id"]]
            assert row["image"].size == (image.width, image.height)
            assert row["image"].getpixel((0, 0)) == (10 + 40 * int(row["id"][-1]), 200 - 30 * int(row["id"][-1]), 7 * int(row["id"][-1]))
    raw = pq.read_table(folder / "images" / "test.parquet").to_pylist()
    assert [r["image"]["bytes"] for r in raw] == [stored[r["id"]].file.open("rb").read() for r in raw]  # the stored bytes, unchanged

    card = (folder / "README.md").read_text()
    assert "Warning: provisional boundaries" in card and "`models` version 1 (PROVISIONAL)" in card
    assert "| train | 2 | 0 | 2 | 1 | 0 | 1 | 0 | 0 | 0 |" in card  # counts per split and level
    assert "This export contains images" in card and "Images are not redistributed" not in card
    assert "| 127.0.0.1:8911 (**stand-in**: the fake provider, not research data) |" in card
    for human in world["humans"]:
        assert f"| `human-{human.pk}` | person (pseudonym) |" in card
    assert f"`{world['gpt'].name}`: model openai / gpt-5.1, prompt annotate-v1" in card
    stand_in = "127.0.0.1:8911 (**stand-in**: the fake provider, not research data)"
    assert f"| {world['run'].pk} | openai | gpt-5.1 | judge-v1 | taxonomy | no | {stand_in} | 3 |" in card
    actions = list(AuditEvent.objects.filter(target_type="ExportJob").values_list("action", flat=True))
    assert "export.finished" in actions and AuditEvent.objects.filter(action="export_hf", actor=admin_user).exists()


@pytest.mark.django_db
def test_without_annotations_and_images_only_the_default_configuration_is_written(world, export_root, tmp_path):
    job = make_job(world, include_annotations=False, include_images=False, splits=["test"])
    exports.run_export(job.pk)
    job.refresh_from_db()
    folder = unzip(job, export_root, tmp_path / "unzipped")
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == ["README.md", "data/test.parquet"]
    card = (folder / "README.md").read_text()
    assert "Images are not redistributed" in card and "config_name: annotations" not in card
    assert f"`{world['gemini'].name}`: model gemini / gemini-3-flash, prompt annotate-v1" in card  # the consensus set, always
    assert job.done == job.total == 3


@pytest.mark.django_db
def test_progress_fields_advance_in_the_database(world, export_root, monkeypatch):
    job = make_job(world, splits=["test"])
    seen = []
    real_export = cprt_bench.export_dataset

    def observed(*args, progress, **kwargs):
        def spy(done, total):
            progress(done, total)
            seen.append(ExportJob.objects.values_list("status", "done", "total").get(pk=job.pk))
        return real_export(*args, progress=spy, **kwargs)

    monkeypatch.setattr(exports, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(cprt_bench, "export_dataset", observed)
    exports.run_export(job.pk)
    assert [s for s, _, _ in seen] == ["running"] * 4  # one chunk per pass: rows, annotations, predictions, images
    assert [d for _, d, _ in seen] == [3, 6, 9, 12] and {t for _, _, t in seen} == {12}
    assert ExportJob.objects.get(pk=job.pk).status == "finished"


@pytest.mark.django_db
def test_progress_writes_are_throttled_but_the_last_one_always_lands(world, monkeypatch):
    job = make_job(world)
    monkeypatch.setattr(exports, "PROGRESS_EVERY_S", 3600.0)
    execution = exports._Execution(job.pk)
    assert execution.claim()  # progress is written by the execution that holds the job
    write = execution.progress
    write(1, 10)  # the first call is written
    write(2, 10)  # within the interval: skipped
    write(3, 10)
    assert ExportJob.objects.values_list("done", "total").get(pk=job.pk) == (1, 10)
    write(10, 10)  # the end is written whatever the clock says
    assert ExportJob.objects.values_list("done", "total").get(pk=job.pk) == (10, 10)


@pytest.mark.django_db
def test_a_failing_job_stores_a_clear_error_and_leaves_no_files(world, export_root, admin_user, make_image):
    make_image("2017_99999", split="other")  # no labels, no published score: nothing to export
    job = make_job(world, splits=["other"], created_by=admin_user)
    assert exports.run_export(job.pk)["status"] == "failed"
    job.refresh_from_db()
    assert job.status == "failed" and job.finished_at and job.zip_path == ""
    assert job.error.startswith("Nothing to export: no image of other has a published or computed score")
    assert not any((export_root / str(job.pk)).rglob("*.parquet")) and not any((export_root / str(job.pk)).rglob("*.zip"))
    event = AuditEvent.objects.get(action="export.failed")
    assert event.actor == admin_user and event.data["error"] == job.error


@pytest.mark.django_db
def test_an_unexpected_error_fails_the_job_with_its_message(world, export_root, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(cprt_bench, "export_dataset", broken)
    job = make_job(world)
    exports.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "The export failed: OSError: No space left on device"


@pytest.mark.django_db
def test_a_redelivered_message_does_not_run_a_finished_job_again(world, export_root):
    job = make_job(world, splits=["test"], include_images=False)
    exports.run_export(job.pk)
    finished = ExportJob.objects.get(pk=job.pk)
    assert exports.run_export(job.pk) == {"job_id": job.pk, "status": "finished"}
    assert ExportJob.objects.get(pk=job.pk).finished_at == finished.finished_at
    assert AuditEvent.objects.filter(action="export.finished").count() == 1


def test_the_task_takes_only_a_positive_job_id():
    from scoring.tasks import run_export

    for bad in ("1", 0, -3, None, 1.5):
        with pytest.raises(ValueError, match="run_export refuses its input"):
            run_export.run(bad)


# ---------------------------------------------------------------------------------------------
# The job page and the download


@pytest.mark.django_db
def test_the_job_page_polls_while_active_and_links_the_download_when_finished(client_as, admin_user, world, export_root):
    job = make_job(world, splits=["test"], include_images=False)
    client = client_as(admin_user)
    page = client.get(reverse("scoring:export", kwargs={"job_id": job.pk})).content.decode()
    assert 'hx-get="%s"' % reverse("scoring:export_progress", kwargs={"job_id": job.pk}) in page and 'hx-trigger="every 2s"' in page
    ExportJob.objects.filter(pk=job.pk).update(status="running", done=2, total=9)
    partial = client.get(reverse("scoring:export_progress", kwargs={"job_id": job.pk})).content.decode()
    assert '<progress value="2" max="9">' in partial and "running" in partial and "<html" not in partial
    exports.run_export(job.pk)
    partial = client.get(reverse("scoring:export_progress", kwargs={"job_id": job.pk})).content.decode()
    assert "hx-trigger" not in partial and reverse("scoring:export_download", kwargs={"job_id": job.pk}) in partial
    assert "finished" in partial and "<td>test</td>" in partial


@pytest.mark.django_db
def test_the_download_streams_the_zip_privately_as_an_attachment(client_as, admin_user, adjudicator, world, export_root):
    job = make_job(world, splits=["test"], include_images=False)
    url = reverse("scoring:export_download", kwargs={"job_id": job.pk})
    assert client_as(admin_user).get(url).status_code == 404  # queued: no file yet
    exports.run_export(job.pk)
    job.refresh_from_db()
    response = client_as(admin_user).get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Cache-Control"] == "private, no-store"
    assert response["Content-Disposition"] == f'attachment; filename="cprt-bench-export-{job.pk}.zip"'
    assert b"".join(response.streaming_content) == (export_root / job.zip_path).read_bytes()
    assert AuditEvent.objects.filter(action="export.download", actor=admin_user, target_id=str(job.pk)).exists()
    assert client_as(adjudicator).get(url).status_code == 403
    assert client_as(None).get(url).status_code == 302



@pytest.mark.django_db
def test_start_export_stores_a_private_zip_job_and_dispatches_it(world, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    data = {"splits": ["test"], "profile": world["profile"], "include_annotations": False, "include_images": True,
            "destination": "zip", "repo_id": "ignored/for-zip", "public": True}
    with django_capture_on_commit_callbacks(execute=True):
        job = exports.start_export(None, data)
    assert sent == [("scoring.run_export", [job.pk])]
    assert (job.destination, job.repo_id, job.private, job.include_images, job.created_by) == ("zip", "", True, True, None)
    assert AuditEvent.objects.get(action="export.launch").data["include_images"] is True
