"""Imports from the page as jobs: the form (paths under CPRT_IMPORT_ROOT only), the job run by the
service (VISPR folder, CPRT-Bench file), progress, failure, cancel (nothing written) and resume."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotations.models import Image, Label
from core.models import AuditEvent
from scoring import imports
from scoring.models import ImportJob
from tests.support.dispatch import record_sends
from tests.support.vispr_release import write_release
from tests.conftest import with_submission_token

pytestmark = pytest.mark.django_db

SPLITS = {"test2017": {"2017_10000001": ["a4_gender"], "2017_10000002": ["a0_safe"]}, "val2017": {"2017_20000001": ["a9_face_complete"]}}


@pytest.fixture
def root(tmp_path, settings):
    settings.CPRT_IMPORT_ROOT = tmp_path / "imports"
    settings.CPRT_IMPORT_ROOT.mkdir()
    write_release(settings.CPRT_IMPORT_ROOT / "vispr", SPLITS)
    return settings.CPRT_IMPORT_ROOT


def bench_file(path, ids):
    from annotations import taxonomy

    tax = taxonomy.active()
    nothing = {f"level{lv}": {k: 0 for k in tax.keys_of_level(lv)} for lv in (1, 2, 3, 4)}
    rows = [{"id": vid, "binary_labels": nothing, "level": 4, "score": 0.0} for vid in ids]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


@pytest.mark.parametrize("data, message", [
    ({"kind": "vispr", "path": "../outside"}, "outside the import folder"),
    ({"kind": "vispr", "path": "/etc"}, "outside the import folder"),
    ({"kind": "vispr", "path": "missing"}, "is not a VISPR release folder"),
    ({"kind": "vispr", "path": "vispr/images"}, "is not a VISPR release folder"),
    ({"kind": "cprt_bench", "path": "vispr"}, "is not a CPRT-Bench file"),
    ({"kind": "cprt_bench", "path": "vispr/attributes.tsv"}, "is not a CPRT-Bench file"),
    ({"kind": "zip", "path": "vispr"}, "Choose a VISPR folder or a CPRT-Bench file"),
    ({"kind": "vispr", "path": ""}, "Give the path"),
    ({"kind": "vispr", "path": "vispr", "vispr_splits": ["test2016"]}, "Unknown VISPR split test2016"),
    ({"kind": "cprt_bench", "path": "vispr", "split": "validation"}, "Unknown split validation"),
])
def test_the_form_refuses_bad_input_and_creates_no_job(client_as, admin_user, root, data, message, monkeypatch):
    sent = record_sends(monkeypatch)
    response = client_as(admin_user).post(reverse("scoring:imports"), with_submission_token({"split": "test"} | data))
    assert response.status_code == 400 and message in response.content.decode()
    assert not ImportJob.objects.exists() and not sent and not AuditEvent.objects.filter(action="import.start").exists()


def test_a_link_out_of_the_import_folder_is_refused(client_as, admin_user, root, tmp_path):
    outside = write_release(tmp_path / "elsewhere", SPLITS)
    (root / "sneaky").symlink_to(outside)
    response = client_as(admin_user).post(reverse("scoring:imports"), with_submission_token({"kind": "vispr", "path": "sneaky", "split": "test"}))
    assert response.status_code == 400 and "outside the import folder" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_vispr_import_from_the_page_runs_as_a_job(client_as, admin_user, root, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    client = client_as(admin_user)
    page = client.get(reverse("scoring:imports")).content.decode()
    assert "<code>vispr</code>" in page  # the folder is suggested
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("scoring:imports"), with_submission_token({"kind": "vispr", "path": "vispr", "split": "test"}))
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("scoring:import", args=[job.pk])
    assert sent == [("scoring.run_import", [job.pk])] and job.status == "queued"
    assert imports.run_import(job.pk)["status"] == "finished"
    job.refresh_from_db()
    assert job.done == job.total > 0 and job.result["added"] == 3 and job.result["splits"] == {"test2017": "test", "val2017": "train"}
    assert Image.objects.get(vispr_id="2017_10000001").vispr_labels == ["a4_gender"]
    body = client.get(reverse("scoring:import", args=[job.pk])).content.decode()
    assert "Images added: <strong>3</strong>" in body and "test2017 → test" in body
    assert client.get(reverse("scoring:import_progress", args=[job.pk])).status_code == 200
    assert AuditEvent.objects.filter(action="import.finished").count() == 1
    # Run again from the page's list: nothing new.
    again = imports.start_import(admin_user, "vispr", "vispr", {"vispr_splits": ["test2017"]})
    imports.run_import(again.pk)
    again.refresh_from_db()
    assert again.result["nothing_new"] and again.result["splits"] == {"test2017": "test"}


def test_cprt_bench_import_from_the_page(client_as, admin_user, root, monkeypatch):
    record_sends(monkeypatch)
    bench_file(root / "bench.jsonl", ["2017_50000001", "2017_50000002"])
    response = client_as(admin_user).post(reverse("scoring:imports"),
                                          with_submission_token({"kind": "cprt_bench", "path": "bench.jsonl", "split": "train"}))
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert imports.run_import(job.pk)["status"] == "finished", ImportJob.objects.get().error
    job.refresh_from_db()
    assert job.result["rows"] == 2 and (job.done, job.total) == (1, 1)
    assert set(Image.objects.filter(split="train").values_list("vispr_id", flat=True)) == {"2017_50000001", "2017_50000002"}


def test_a_refused_folder_fails_the_job_with_the_message_and_writes_nothing(admin_user, root, monkeypatch):
    record_sends(monkeypatch)
    job = imports.start_import(admin_user, "vispr", "vispr", {})
    (root / "vispr" / "annotations" / "test2017" / "2017_10000001.json").write_text("{broken")
    assert imports.run_import(job.pk)["status"] == "failed"
    job.refresh_from_db()
    assert "malformed JSON" in job.error and "annotations/test2017/2017_10000001.json" in job.error
    assert not Image.objects.exists() and not Label.objects.exists()
    assert imports.can_resume(job)


def test_cancel_while_running_writes_nothing_and_resume_runs_it_again(admin_user, root, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    job = imports.start_import(admin_user, "vispr", "vispr", {})
    real_check = imports._Execution.check

    def cancel_at_commit(self):
        ImportJob.objects.filter(pk=self.job_id).update(status="cancelling")  # the admin pressed Cancel meanwhile
        real_check(self)

    monkeypatch.setattr(imports._Execution, "check", cancel_at_commit)
    assert imports.run_import(job.pk)["status"] == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled" and "nothing was written" in job.error
    assert not Image.objects.exists() and not Label.objects.exists()
    monkeypatch.setattr(imports._Execution, "check", real_check)
    with django_capture_on_commit_callbacks(execute=True):
        assert imports.resume_import(admin_user, job)
    assert sent[-1] == ("scoring.run_import", [job.pk])
    assert imports.run_import(job.pk)["status"] == "finished"
    assert Image.objects.count() == 3


def test_cancel_a_queued_import_from_the_page(client_as, admin_user, root, monkeypatch):
    record_sends(monkeypatch)
    job = imports.start_import(admin_user, "vispr", "vispr", {})
    response = client_as(admin_user).post(reverse("scoring:import_cancel", args=[job.pk]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "cancelled"
    assert imports.run_import(job.pk)["status"] == "cancelled" and not Image.objects.exists()


def test_only_admins(client_as, adjudicator, reviewer_a, admin_user, root, monkeypatch):
    record_sends(monkeypatch)
    job = imports.start_import(admin_user, "vispr", "vispr", {})
    for user in (adjudicator, reviewer_a):
        client = client_as(user)
        assert client.get(reverse("scoring:imports")).status_code == 403
        assert client.get(reverse("scoring:import", args=[job.pk])).status_code == 403
        assert client.post(reverse("scoring:imports"), {"kind": "vispr", "path": "vispr"}).status_code == 403
    assert client_as(admin_user).get(reverse("scoring:import", args=[999999])).status_code == 404
    assert ImportJob.objects.count() == 1
