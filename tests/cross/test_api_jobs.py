"""POST /api/exports/, /api/imports/, /api/datasets/ (issue 36): admins launch as the pages do, once per
Idempotency-Key (a replay gets the first answer, one job); the pages' forms refuse a POST without
their one-time submission token (nothing launched: a script posting the form used to launch once per
post); bad input is a 400 naming the field, and nothing is stored."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotations.datasets.models import DatasetBuild
from core.models import IdempotencyKey
from scoring.models import ExportJob, ImportJob
from tests.conftest import make_user, with_submission_token
from tests.support.dispatch import record_sends
from tests.support.vispr_release import write_release
from tests.support.vispr_world import make_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path, settings, monkeypatch):
    make_world()
    settings.CPRT_IMPORT_ROOT = tmp_path / "imports"
    write_release(settings.CPRT_IMPORT_ROOT / "vispr", {"test2017": {"2017_10000001": ["a4_gender"]}})
    return record_sends(monkeypatch)


def api(user, key: str | None = None) -> Client:
    headers = {"Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return Client(headers=headers)


def post(client, name: str, body) -> object:
    return client.post(reverse(name), json.dumps(body), content_type="application/json")


# URL name -> (a launch body, the job model, the page form's URL name and its fields)
LAUNCHES = {
    "api:export-list": ({"splits": ["test"], "include_annotations": True}, ExportJob,
                        "scoring:exports", {"splits": ["test"], "destination": "zip"}),
    "api:import-list": ({"kind": "vispr", "path": "vispr", "vispr_splits": ["test2017"]}, ImportJob,
                        "scoring:imports", {"kind": "vispr", "path": "vispr", "split": "test"}),
    "api:dataset-list": ({"name": "paper-test", "preset": "cprt-paper", "vispr_split": "test"}, DatasetBuild,
                         "datasets:versions", {"source": "cprt-paper", "vispr_split": "test", "seed": "0", "name": "v1"}),
}


def page_data(name: str) -> dict:
    from scoring.models import ScoringProfile

    data = dict(LAUNCHES[name][3])
    if name == "api:export-list":
        data["profile"] = str(ScoringProfile.active().pk)
    return data


@pytest.mark.parametrize("name", list(LAUNCHES))
def test_a_replayed_key_launches_one_job_and_gets_the_first_answer(world, admin_user, name):
    body, model = LAUNCHES[name][:2]
    client = api(admin_user, "script-run-2026-11-28")
    first = post(client, name, body)
    assert first.status_code == 201, first.content
    replay = post(client, name, dict(reversed(list(body.items()))))
    assert replay.status_code == 201 and replay.json() == first.json() and replay["Idempotent-Replayed"] == "true"
    assert model.objects.count() == 1 and first.json()["id"] == model.objects.get().pk
    assert post(client, name, {**body, "x": 1}).status_code == 422 and model.objects.count() == 1
    detail = api(admin_user).get(reverse(name.replace("-list", "-detail"), args=[first.json()["id"]]))
    assert detail.status_code == 200 and detail.json()["status"] == "queued"


@pytest.mark.parametrize("name", list(LAUNCHES))
def test_a_page_form_post_without_its_token_is_refused_and_launches_nothing(world, admin_user, client_as, name):
    model, page = LAUNCHES[name][1:3]
    client = client_as(admin_user)
    for _ in range(5):
        refused = client.post(reverse(page), page_data(name))
        assert refused.status_code == 400 and "without its submission token" in refused.content.decode()
    assert not model.objects.exists() and not IdempotencyKey.objects.exists()
    assert client.post(reverse(page), with_submission_token(page_data(name))).status_code == 302 and model.objects.count() == 1


@pytest.mark.parametrize("name, body, field", [
    ("api:export-list", {"splits": ["validation"]}, "splits"),
    ("api:export-list", {"splits": "test"}, "splits"),
    ("api:export-list", {"splits": ["test"], "destination": "ftp"}, "destination"),
    ("api:export-list", {"splits": ["test"], "profile": 999999}, "profile"),
    ("api:import-list", {"kind": "vispr", "path": "../outside"}, "path"),
    ("api:import-list", {"kind": "zip", "path": "vispr"}, "kind"),
    ("api:dataset-list", {"name": "bad name!", "preset": "cprt-paper"}, "name"),
    ("api:dataset-list", {"name": "v2", "preset": "nope"}, "source"),
    ("api:dataset-list", {"name": "v2", "recipe": {"vispr_splits": ["test2017"], "rules": {"name": "r"}}}, "recipe"),
    ("api:dataset-list", {"name": "v2"}, "non_field_errors"),
])
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(world, admin_user, name, body, field):
    response = post(api(admin_user, "k-bad"), name, body)
    assert response.status_code == 400 and field in response.json(), response.content
    assert not LAUNCHES[name][1].objects.exists() and not IdempotencyKey.objects.exists()


def test_a_recipe_object_builds_as_an_uploaded_recipe_file(world, admin_user):
    from annotations.datasets import recipes

    recipe = recipes.preset("cprt-paper").as_json()
    response = post(api(admin_user), "api:dataset-list", {"name": "from-api", "recipe": recipe, "vispr_split": "test"})
    assert response.status_code == 201, response.content
    assert DatasetBuild.objects.get().name == "from-api"


@pytest.mark.parametrize("name", list(LAUNCHES))
def test_only_admins_may_launch(world, name):
    reviewer = make_user("rev", "reviewer")
    response = post(api(reviewer), name, LAUNCHES[name][0])
    assert response.status_code == 403 and not LAUNCHES[name][1].objects.exists()
    assert api(reviewer).get(reverse(name)).status_code == 403


def test_the_schema_documents_the_new_launches_with_their_key(admin_user):
    schema = api(admin_user).get(reverse("api:schema") + "?format=json").json()
    for path in ("/api/exports/", "/api/imports/", "/api/datasets/"):
        launch = schema["paths"][path]["post"]
        assert any(p["name"] == "Idempotency-Key" for p in launch["parameters"]) and "422" in launch["responses"]
