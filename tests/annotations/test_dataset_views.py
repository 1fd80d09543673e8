"""The dataset pages: build from a preset or an uploaded recipe, follow the build, the version's page,
a labeling batch from a version; refusals change nothing."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotations.datasets import build, recipes
from annotations.datasets.models import DatasetBuild, DatasetVersion
from annotations.models import Batch, Image
from core.models import AuditEvent
from tests.support.dispatch import record_sends
from tests.support.vispr_world import PAPER_TEST, make_world
from tests.conftest import with_submission_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client_as, admin_user):
    make_world()
    return client_as(admin_user)


def launch(client, **data):
    return client.post(reverse("datasets:versions"),
                       with_submission_token({"source": "cprt-paper", "vispr_split": "test", "seed": "0", "name": "v1", **data}))


def test_the_page_offers_the_preset_and_a_free_name(admin):
    build.start_build(None, recipes.parse({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"]}]}), "cprt-paper",
                      dispatch=False)
    build.run_build(DatasetBuild.objects.get().pk)
    page = admin.get(reverse("datasets:versions")).content.decode()
    assert '<option value="cprt-paper" selected>preset: cprt-paper</option>' in page
    assert 'value="cprt-paper-2"' in page and ">VISPR test2017</option>" in page
    preset = admin.get(reverse("datasets:preset", args=["cprt-paper"])).json()
    assert [r["name"] for r in preset["rules"]] == ["severe", "safe", "level2-no-face"]


def test_build_from_the_preset_then_see_the_version(admin, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        response = launch(admin)
    job = DatasetBuild.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("datasets:build", args=[job.pk])
    assert sent == [("annotations.build_dataset", [job.pk])] and job.created_by is not None
    assert "queued" in admin.get(reverse("datasets:build", args=[job.pk])).content.decode()
    build.run_build(job.pk)
    card = admin.get(reverse("datasets:build_progress", args=[job.pk])).content.decode()
    version = DatasetVersion.objects.get(name="v1")
    assert "finished" in card and reverse("datasets:version", args=[version.pk]) in card and "severe 4" in card
    page = admin.get(reverse("datasets:version", args=[version.pk])).content.decode()
    assert '<strong id="member-count">7</strong>' in page and "severe &amp; level2-no-face" in page
    assert "stored labels test2017" in page and "2017_0004" in page and "2017_0008" not in page
    assert 'id="unseen-ids"' in page and "a31_passport" in page
    listing = admin.get(reverse("datasets:versions")).content.decode()
    assert reverse("datasets:version", args=[version.pk]) in listing


def test_an_uploaded_recipe_with_a_quota(admin, monkeypatch):
    record_sends(monkeypatch)
    recipe = {"vispr_splits": ["test2017"], "seed": 5, "rules": [{"name": "safe", "any": ["a0_safe"], "only": True, "quota": 1}]}
    upload = SimpleUploadedFile("recipe.json", json.dumps(recipe).encode(), "application/json")
    response = launch(admin, source="upload", recipe_file=upload, vispr_split="", seed="", name="one-safe")
    assert response.status_code == 302
    build.run_build(DatasetBuild.objects.get().pk)
    version = DatasetVersion.objects.get(name="one-safe")
    assert version.seed == 5 and version.rule_counts == {"safe": 1} and version.recipe["candidates"] == {"safe": 2}
    assert version.members.get().vispr_id in PAPER_TEST["safe"]


@pytest.mark.parametrize("data, message", [
    ({"source": "upload"}, "Choose the recipe file to upload."),
    ({"source": "upload", "recipe_file": SimpleUploadedFile("r.json", b"{not json")}, "The recipe file is not valid JSON"),
    ({"source": "upload", "recipe_file": SimpleUploadedFile(
        "r.json", b'{"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "quota": -3}]}')},
     "quota: Input should be greater than or equal to 1"),
    ({"source": "upload", "recipe_file": SimpleUploadedFile("r.json", b'{"vispr_splits": ["test2017"], "rules": [], "extra": 1}')},
     "extra: unknown field"),
    ({"recipe_file": SimpleUploadedFile("r.json", b"{}")}, "A recipe file goes with"),
    ({"source": "nope"}, "Unknown recipe nope"),
    ({"vispr_split": "val2099"}, "Unknown split val2099"),
    ({"seed": "-1"}, "The seed is 0 or more."),
    ({"name": "bad name!"}, "Use letters, digits"),
    ({"name": ""}, "This field is required."),
])
def test_bad_input_is_refused_with_a_message_and_nothing_is_stored(admin, monkeypatch, data, message):
    sent = record_sends(monkeypatch)
    response = launch(admin, **data)
    assert response.status_code == 400 and message in response.content.decode()
    assert not DatasetBuild.objects.exists() and sent == [] and not AuditEvent.objects.filter(action__startswith="dataset.").exists()


def test_a_taken_name_is_refused(admin, monkeypatch):
    record_sends(monkeypatch)
    launch(admin)
    build.run_build(DatasetBuild.objects.get().pk)
    response = launch(admin)
    assert response.status_code == 400 and "A dataset version named &#x27;v1&#x27; exists" in response.content.decode()
    assert DatasetBuild.objects.count() == 1


def test_cancel_from_the_page(admin, monkeypatch):
    record_sends(monkeypatch)
    launch(admin)
    job = DatasetBuild.objects.get()
    response = admin.post(reverse("datasets:build_cancel", args=[job.pk]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "cancelled" and "Build again" in admin.get(reverse("datasets:build", args=[job.pk])).content.decode()


def test_a_labeling_batch_from_a_version(admin, monkeypatch):
    record_sends(monkeypatch)
    launch(admin)
    build.run_build(DatasetBuild.objects.get().pk)
    version = DatasetVersion.objects.get()
    old = Batch.objects.create(name="earlier")
    Image.objects.filter(vispr_id__in=["2017_0001", "2017_0008"]).update(batch=old)
    response = admin.post(reverse("datasets:version_batch", args=[version.pk]), {"name": "paper round 1"}, follow=True)
    assert "Batch paper round 1 created with the v1 images (1 of them left another batch)." in response.content.decode()
    batch = Batch.objects.get(name="paper round 1")
    assert set(batch.images.values_list("vispr_id", flat=True)) == set().union(*PAPER_TEST.values())
    assert list(old.images.values_list("vispr_id", flat=True)) == ["2017_0008"]
    event = AuditEvent.objects.get(action="dataset.batch")
    assert event.data["images"] == 7 and event.data["moved_from_other_batches"] == 1
    again = admin.post(reverse("datasets:version_batch", args=[version.pk]), {"name": "paper round 1"})
    assert again.status_code == 400 and "A batch named &#x27;paper round 1&#x27; exists" in again.content.decode()
    blank = admin.post(reverse("datasets:version_batch", args=[version.pk]), {"name": "  "})
    assert blank.status_code == 400 and Batch.objects.count() == 2
