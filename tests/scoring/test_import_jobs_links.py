"""Imports from the page and symbolic links inside a release: a linked folder that stays under
CPRT_IMPORT_ROOT is followed (as the command does); one that leads outside it is refused naming it."""
from __future__ import annotations

import shutil

import pytest
from django.urls import reverse

from scoring import imports
from scoring.models import ImportJob
from tests.conftest import with_submission_token
from tests.support.dispatch import record_sends
from tests.support.vispr_release import write_release

pytestmark = pytest.mark.django_db

SPLITS = {"test2017": {"2017_10000001": ["a4_gender"]}}


@pytest.fixture
def root(tmp_path, settings):
    settings.CPRT_IMPORT_ROOT = tmp_path / "imports"
    settings.CPRT_IMPORT_ROOT.mkdir()
    write_release(settings.CPRT_IMPORT_ROOT / "vispr", SPLITS)
    return settings.CPRT_IMPORT_ROOT


def post(client_as, admin_user):
    return client_as(admin_user).post(reverse("scoring:imports"), with_submission_token({"kind": "vispr", "path": "vispr", "split": "test"}))


def test_a_linked_image_folder_outside_the_import_folder_is_refused(client_as, admin_user, root, tmp_path):
    outside = tmp_path / "other-disk"
    shutil.move(root / "vispr" / "images" / "test2017", outside)
    (root / "vispr" / "images" / "test2017").symlink_to(outside)
    response = post(client_as, admin_user)
    assert response.status_code == 400
    assert "vispr/images/test2017 is a symbolic link to a folder outside the import folder" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_a_linked_image_folder_under_the_import_folder_is_followed_and_shown(client_as, admin_user, root, monkeypatch):
    record_sends(monkeypatch)
    shutil.move(root / "vispr" / "images", root / "images-disk")
    (root / "vispr" / "images").symlink_to(root / "images-disk")
    response = post(client_as, admin_user)
    assert response.status_code == 302, response.content.decode()[:500]
    job = ImportJob.objects.get(path="vispr")
    assert imports.run_import(job.pk)["status"] == "finished"
    job.refresh_from_db()
    assert job.result["added"] == 1 and job.result["links"] == [{"link": "images", "target": "images-disk"}]
    body = client_as(admin_user).get(reverse("scoring:import", args=[job.pk])).content.decode()
    assert "Followed symbolic link <code>images</code> → <code>images-disk</code>." in body
