"""The labeling API (/api/labelings/): claim, draft, submit and skip through the services, with the
labeling rules (versions, missing answers, adjudication lock, other reviewers' labelings) and strict
input; every refusal leaves the labeling as it was."""
from __future__ import annotations

import json

import pytest

from annotations import taxonomy
from annotations.models import Adjudication, Label, Labeling
from tests.support.labeling import all_answers


@pytest.fixture
def queue_images(make_image):
    return [make_image(f"2017_api{i:03d}", color=(i, 40, 90)) for i in range(3)]


def snapshot(labeling) -> tuple:
    labeling.refresh_from_db()
    return (labeling.version, labeling.status, labeling.draft_values, labeling.draft_rationales, labeling.note, labeling.flag,
            Label.objects.filter(image_id=labeling.image_id).count())




def test_claim_draft_submit_through_the_services(api, reviewer_a, queue_images):
    client = api(reviewer_a)
    first = client.post("/api/labelings/", format="json")
    assert first.status_code == 201
    labeling = first.json()
    assert labeling["status"] == "draft" and labeling["version"] == 1 and len(labeling["rows"]) == 22
    again = client.post("/api/labelings/", {}, format="json")
    assert again.status_code == 200 and again.json()["id"] == labeling["id"]  # the open draft comes back
    url = f"/api/labelings/{labeling['id']}/"
    saved = client.put(url, {"version": 1, "values": {"gov_ids": 1, "age": 0.5}, "rationales": {"gov_ids": " a passport "},
                             "note": "n", "flag": ""}, format="json")
    assert saved.status_code == 200
    assert saved.json()["version"] == 2 and saved.json()["values"] == {"gov_ids": 1.0, "age": 0.5}
    assert saved.json()["rationales"] == {"gov_ids": "a passport"}
    assert client.get(url).json()["version"] == 2
    submitted = client.post(url + "submit/", {"version": 2, "values": all_answers(1)}, format="json")
    assert submitted.status_code == 200 and submitted.json()["status"] == "submitted"
    assert Label.objects.filter(image_id=labeling["image"], annotator__user=reviewer_a).count() == 22
    assert [r["id"] for r in client.get("/api/labelings/", {"status": "submitted"}).json()["results"]] == [labeling["id"]]


def test_claim_answers_204_when_nothing_is_left(api, reviewer_a):
    assert api(reviewer_a).post("/api/labelings/").status_code == 204


def test_stale_version_is_409_and_changes_nothing(api, reviewer_a, queue_images):
    client = api(reviewer_a)
    labeling_id = client.post("/api/labelings/").json()["id"]
    url = f"/api/labelings/{labeling_id}/"
    assert client.put(url, {"version": 1, "values": {"age": 1}}, format="json").status_code == 200
    labeling = Labeling.objects.get(pk=labeling_id)
    before = snapshot(labeling)
    for method, path in (("put", url), ("post", url + "submit/")):
        response = getattr(client, method)(path, {"version": 1, "values": all_answers(0)}, format="json")
        assert response.status_code == 409
        assert "Stale version" in response.json()["detail"] and response.json()["current_version"] == 2
    assert snapshot(labeling) == before


def test_submit_with_missing_answers_lists_them(api, reviewer_a, queue_images):
    client = api(reviewer_a)
    labeling_id = client.post("/api/labelings/").json()["id"]
    values = all_answers(0)
    del values["gov_ids"], values["age"]
    labeling = Labeling.objects.get(pk=labeling_id)
    before = snapshot(labeling)
    response = client.post(f"/api/labelings/{labeling_id}/submit/", {"version": 1, "values": values}, format="json")
    assert response.status_code == 400 and sorted(response.json()["missing"]) == ["age", "gov_ids"]
    assert snapshot(labeling) == before


def test_adjudicated_image_is_locked_423(api, reviewer_a, adjudicator, queue_images):
    client = api(reviewer_a)
    labeling_id = client.post("/api/labelings/").json()["id"]
    labeling = Labeling.objects.get(pk=labeling_id)
    Adjudication.objects.create(image_id=labeling.image_id, attribute_id=taxonomy.attribute_ids()["age"], value=1.0, adjudicator=adjudicator)
    before = snapshot(labeling)
    response = client.put(f"/api/labelings/{labeling_id}/", {"version": 1, "values": {"age": 1}}, format="json")
    assert response.status_code == 423 and "adjudicator" in response.json()["detail"]
    assert client.post(f"/api/labelings/{labeling_id}/submit/", {"version": 1, "values": all_answers()}, format="json").status_code == 423
    assert client.get(f"/api/labelings/{labeling_id}/").json()["locked"] is True
    assert snapshot(labeling) == before


def test_skip_then_the_labeling_cannot_change(api, reviewer_a, queue_images):
    client = api(reviewer_a)
    labeling_id = client.post("/api/labelings/").json()["id"]
    assert client.post(f"/api/labelings/{labeling_id}/skip/", {"x": 1}, format="json").status_code == 400
    skipped = client.post(f"/api/labelings/{labeling_id}/skip/")
    assert skipped.status_code == 200 and skipped.json()["status"] == "skipped"
    response = client.put(f"/api/labelings/{labeling_id}/", {"version": 2, "values": {}}, format="json")
    assert response.status_code == 400 and "skipped" in response.json()["detail"]


def test_another_reviewers_labeling_is_404(api, reviewer_a, reviewer_b, adjudicator, queue_images):
    labeling_id = api(reviewer_a).post("/api/labelings/").json()["id"]
    labeling = Labeling.objects.get(pk=labeling_id)
    before = snapshot(labeling)
    for user in (reviewer_b, adjudicator):
        client = api(user)
        assert client.get(f"/api/labelings/{labeling_id}/").status_code == 404
        assert client.put(f"/api/labelings/{labeling_id}/", {"version": 1, "values": {"age": 1}}, format="json").status_code == 404
        assert client.post(f"/api/labelings/{labeling_id}/submit/", {"version": 1, "values": all_answers()}, format="json").status_code == 404
        assert client.post(f"/api/labelings/{labeling_id}/skip/").status_code == 404
        assert labeling_id not in [r["id"] for r in client.get("/api/labelings/").json()["results"]]
    assert snapshot(labeling) == before


BAD_BODIES = [
    ({"values": {"age": 1}}, "version"),
    ({"version": "1"}, "valid integer"),
    ({"version": True}, "valid integer"),
    ({"version": 1.5}, "valid integer"),
    ({"version": 0}, "greater than or equal to 1"),
    ({"version": 10**30}, "less than or equal to"),
    ({"version": 1, "values": {"age": 2}}, "0 (no), 0.5 (unsure) or 1 (yes)"),
    ({"version": 1, "values": {"age": "1"}}, "0 (no), 0.5 (unsure) or 1 (yes)"),
    ({"version": 1, "values": {"age": True}}, "0 (no), 0.5 (unsure) or 1 (yes)"),
    ({"version": 1, "values": {"age": None}}, "null"),
    ({"version": 1, "values": [1, 0]}, "dictionary"),
    ({"version": 1, "values": {"not_a_key": 1}}, "Unknown attribute(s): not_a_key"),
    ({"version": 1, "rationales": {"not_a_key": "x"}}, "Unknown attribute(s): not_a_key"),
    ({"version": 1, "rationales": {"age": 5}}, "string"),
    ({"version": 1, "note": 5}, "string"),
    ({"version": 1, "note": "x" * 5001}, "no more than 5000"),
    ({"version": 1, "rationales": {"age": "x" * 2001}}, "no more than 2000"),
    ({"version": 1, "flag": "burnt"}, "not a valid choice"),
    ({"version": 1, "colour": "red"}, "Unknown field(s): colour"),
    ([1, 2], "Expected a dictionary"),
]


@pytest.mark.parametrize("path", ["", "submit/"])
@pytest.mark.parametrize("body, message", BAD_BODIES)
def test_labeling_writes_refuse_bad_json(api, reviewer_a, queue_images, path, body, message):
    client = api(reviewer_a)
    labeling = Labeling.objects.get(pk=client.post("/api/labelings/").json()["id"])
    before = snapshot(labeling)
    method = client.put if path == "" else client.post
    response = method(f"/api/labelings/{labeling.pk}/{path}", body, format="json")
    assert response.status_code == 400 and message in json.dumps(response.json()), response.json()
    assert snapshot(labeling) == before


RAW_BODIES = [
    (b'{"version": 1, "values": {"age": 1}', "application/json", 400, "not valid JSON"),
    (b'{"version": 1, "note": "\xff\xfe"}', "application/json", 400, "not valid UTF-8"),
    (b'{"version": 1, "values": {"age": NaN}}', "application/json", 400, "not valid JSON"),
    (b'{"version": 1, "note": "' + b"x" * 300_000 + b'"}', "application/json", 400, "larger than"),
    (b"[" * 150_000 + b"]" * 150_000, "application/json", 400, "larger than"),
    (b"[" * 50_000 + b"]" * 50_000, "application/json", 400, "not valid JSON"),
    (b"1" * 5000, "application/json", 400, "not valid JSON"),
    (b"version=1&value-age=1", "application/x-www-form-urlencoded", 415, "Unsupported media type"),
]


@pytest.mark.parametrize("raw, content_type, status, message", RAW_BODIES)
def test_labeling_writes_refuse_broken_bodies(api, reviewer_a, queue_images, raw, content_type, status, message):
    client = api(reviewer_a)
    labeling = Labeling.objects.get(pk=client.post("/api/labelings/").json()["id"])
    before = snapshot(labeling)
    response = client.generic("PUT", f"/api/labelings/{labeling.pk}/", raw, content_type=content_type)
    assert response.status_code == status and message in response.json()["detail"], response.json()
    assert snapshot(labeling) == before


def test_claim_refuses_a_body_with_keys(api, reviewer_a, queue_images):
    response = api(reviewer_a).post("/api/labelings/", {"image": 1}, format="json")
    assert response.status_code == 400 and "Unknown field(s): image" in json.dumps(response.json())
    assert not Labeling.objects.exists()
