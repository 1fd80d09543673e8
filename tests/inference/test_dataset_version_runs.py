"""Runs scoped to a dataset version: the launch page, the API and launch_run take a version; the run
covers only its images (and what the other filters keep of them); an unknown version is refused."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from core.models import AuditEvent
from inference.models import Run
from inference.selection import Selection, select_image_ids
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.dispatch import record_sends
from tests.support.vispr_world import PAPER_TEST, make_world
from tests.conftest import with_submission_token

VALID = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy",
         "split": "all", "concurrency": "4", "seed": "0", "action": "launch"}


@pytest.fixture
def version(db):
    """The cprt-paper version of the test split over VISPR images with stored bytes."""
    world = make_world(with_file=True)
    call_command("build_dataset", "--recipe", "cprt-paper", "--vispr-split", "test", "--name", "paper", stdout=io.StringIO(), stderr=io.StringIO())
    members = sorted(world[v].pk for v in set().union(*PAPER_TEST.values()))
    return world, members


def vispr_ids(run: Run) -> set[str]:
    from annotations.models import Image
    return set(Image.objects.filter(pk__in=run.image_ids).values_list("vispr_id", flat=True))


def test_selection_keeps_only_the_versions_images(version):
    world, members = version
    ids, described = select_image_ids(Selection(dataset_version="paper"))
    assert ids == members and described["dataset_version"] == "paper" and described["matched"] == 7
    sampled, _ = select_image_ids(Selection(dataset_version="paper", sample_size=3, seed=4))
    assert len(sampled) == 3 and set(sampled) <= set(members)
    with pytest.raises(ValueError, match="no dataset version named 'gone'"):
        select_image_ids(Selection(dataset_version="gone"))


def test_the_launch_page_scopes_a_run_to_a_version(version, client_as, admin_user, openai_server, monkeypatch):
    record_sends(monkeypatch)
    client = client_as(admin_user)
    page = client.get(reverse("inference:run_new") + "?dataset_version=paper").content.decode()
    assert '<option value="paper" selected>paper (7 images)</option>' in page
    response = client.post(reverse("inference:run_new"), with_submission_token({**VALID, "dataset_version": "paper"}))
    assert response.status_code == 302
    run = Run.objects.get()
    assert vispr_ids(run) == set().union(*PAPER_TEST.values()) and run.selection["dataset_version"] == "paper"


def test_the_api_scopes_a_run_and_refuses_an_unknown_version(version, client_as, admin_user, openai_server, monkeypatch):
    record_sends(monkeypatch)
    client = client_as(admin_user)
    body = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "concurrency": 4}
    bad = client.post("/api/runs/", {**body, "dataset_version": "nope"}, content_type="application/json")
    assert bad.status_code == 400 and "There is no dataset version named nope." in bad.json()["dataset_version"][0]
    assert not Run.objects.exists()
    ok = client.post("/api/runs/", {**body, "dataset_version": "paper", "split": "test"}, content_type="application/json")
    assert ok.status_code == 201, ok.content
    assert vispr_ids(Run.objects.get()) == set().union(*PAPER_TEST.values())


def test_launch_run_takes_a_dataset_version(version, openai_server, monkeypatch):
    record_sends(monkeypatch)
    out = io.StringIO()
    call_command("launch_run", "--kind", "judge", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "zero_shot",
                 "--dataset-version", "paper", "--json", stdout=out, stderr=io.StringIO())
    run = Run.objects.get(pk=json.loads(out.getvalue())["id"])
    assert vispr_ids(run) == set().union(*PAPER_TEST.values())
    before = AuditEvent.objects.count()
    with pytest.raises(CommandError, match="--dataset-version: There is no dataset version named other"):
        call_command("launch_run", "--kind", "judge", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "zero_shot",
                     "--dataset-version", "other", stdout=io.StringIO(), stderr=io.StringIO())
    assert Run.objects.count() == 1 and AuditEvent.objects.count() == before


def test_a_version_and_a_split_that_share_no_image_are_refused(version, client_as, admin_user, openai_server):
    response = client_as(admin_user).post(reverse("inference:run_new"),
                                          with_submission_token({**VALID, "dataset_version": "paper", "split": "train"}))
    assert response.status_code == 400 and "The selection matches no images" in response.content.decode()
    assert not Run.objects.exists()
