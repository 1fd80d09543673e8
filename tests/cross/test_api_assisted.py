"""Assisted labels through the API (issue 38): labeling from a script in a batch with model suggestions on (claim,
read, save, submit: no 500), the `assisted` / `suggestions_seen` / `answers_as_suggested` record, and the agreement
study's `?assisted=` filter that keeps assisted human labels apart from the human-vs-model figures."""
from __future__ import annotations

import pytest

from annotations import taxonomy
from annotations.models import Annotator, Batch, Labeling
from annotations.services import editing, labeling_queue
from tests.support.labeling import all_answers

SUGGESTED = {"gov_ids": 1.0, "biometrics": 1.0, "age": 0.5}  # gpt's answers; every other attribute 0


def gpt_value(key: str) -> float:
    return SUGGESTED.get(key, 0.0)


@pytest.fixture
def suggestion_batch(make_image, model_annotators, set_labels):
    """Six images in a batch that shows gpt's suggestions; gpt has labelled each of them."""
    gpt, _gemini = model_annotators
    batch = Batch.objects.create(name="with-suggestions", show_model_suggestions=True)
    batch.suggestion_annotators.set([gpt])
    images = []
    for i in range(6):
        image = make_image(f"2017_as{i:02d}", color=(i, 60, 120))
        image.batch = batch
        image.save(update_fields=["batch"])
        set_labels(image, gpt, {k: gpt_value(k) for k in taxonomy.active().keys})
        images.append(image)
    return batch, images, gpt


def label_without_suggestions(user, value: float = 0.0) -> Labeling:
    """Claim and submit one image through the services (no suggestion in view when it is not in a suggestion batch)."""
    labeling = labeling_queue.claim_next(user)
    return editing.submit(labeling, user, version=labeling.version, values=all_answers(value), rationales={})


def test_the_labeling_api_works_with_suggestions_on_and_records_assisted_labels(api, reviewer_a, suggestion_batch):
    batch, images, gpt = suggestion_batch
    client = api(reviewer_a)
    claimed = client.post("/api/labelings/", format="json")
    assert claimed.status_code == 201, claimed.content[:300]  # was a 500: labeling_detail unpacked 3 of 4 values
    body = claimed.json()
    rows = {r["key"]: r for r in body["rows"]}
    assert rows["gov_ids"]["suggestions"] == [{"annotator": "openai/gpt-5.1 · prompt annotate-v1", "value": 1.0, "rationale": ""}]
    assert rows["age"]["suggestions"][0]["value"] == 0.5 and rows["age"]["others"] == []
    assert body["assisted"] is False and body["suggestions_seen"] == []  # nothing answered yet
    url = f"/api/labelings/{body['id']}/"
    assert client.get(url).status_code == 200
    saved = client.put(url, {"version": 1, "values": {"gov_ids": 1, "age": 0}}, format="json").json()
    assert saved["assisted"] is True and saved["suggestions_seen"] == [gpt.name]
    assert saved["answers_as_suggested"] == {"age": False, "gov_ids": True}  # 0 typed where the model said 0.5
    answers = {k: gpt_value(k) for k in taxonomy.active().keys}
    answers["biometrics"] = 0.0
    submitted = client.post(url + "submit/", {"version": saved["version"], "values": answers}, format="json")
    assert submitted.status_code == 200 and submitted.json()["status"] == "submitted"
    done = client.get(url).json()
    assert done["assisted"] is True and done["suggestions_seen"] == [gpt.name]
    assert done["answers_as_suggested"]["biometrics"] is False and sum(done["answers_as_suggested"].values()) == len(answers) - 1
    assert all(r["suggestions"] == [] for r in done["rows"])  # submitted: no suggestion any more, the others' labels instead
    listed = client.get("/api/labelings/", {"status": "submitted"}).json()["results"]
    assert [(r["id"], r["assisted"]) for r in listed] == [(body["id"], True)]
    # A draft in a batch whose suggestions are off (or with no model label) is not assisted.
    batch.show_model_suggestions = False
    batch.save()
    claimed = client.post("/api/labelings/", format="json").json()
    saved = client.put(f"/api/labelings/{claimed['id']}/", {"version": 1, "values": {"gov_ids": 1}}, format="json").json()
    assert saved["assisted"] is False and saved["suggestions_seen"] == [] and saved["answers_as_suggested"] == {}


def test_six_assisted_submissions_count_in_agreement_only_when_asked(api, reviewer_a, reviewer_b, adjudicator, make_image,
                                                                    suggestion_batch, set_labels):
    """The issue's "done when": six labelings submitted through the API in a batch with suggestions, answering as
    suggested, each read `assisted: true`; reviewer_a's human-vs-model rows have a smaller n under ?assisted=exclude."""
    batch, images, gpt = suggestion_batch
    batch.show_model_suggestions = False  # reviewer_b labels these images first, without suggestions
    batch.save()
    for _ in images:
        assert not label_without_suggestions(reviewer_b).assisted
    batch.show_model_suggestions = True
    batch.save()
    client = api(reviewer_a)
    assisted_ids = []
    for _ in images:
        claimed = client.post("/api/labelings/", format="json")
        assert claimed.status_code == 201
        body = claimed.json()
        answers = {r["key"]: r["suggestions"][0]["value"] for r in body["rows"]}  # answering as suggested
        submitted = client.post(f"/api/labelings/{body['id']}/submit/", {"version": body["version"], "values": answers}, format="json")
        assert submitted.status_code == 200
        assisted_ids.append(body["id"])
    for labeling_id in assisted_ids:
        read = client.get(f"/api/labelings/{labeling_id}/").json()
        assert read["assisted"] is True and read["suggestions_seen"] == [gpt.name] and all(read["answers_as_suggested"].values())
    # Two more images outside the batch: both reviewers label them independently.
    for i in range(2):
        image = make_image(f"2017_in{i:02d}", color=(200, i, 9))
        set_labels(image, gpt, {k: gpt_value(k) for k in taxonomy.active().keys})
        assert not label_without_suggestions(reviewer_b).assisted
        claimed = client.post("/api/labelings/", format="json").json()
        done = client.post(f"/api/labelings/{claimed['id']}/submit/", {"version": 1, "values": all_answers(0)}, format="json")
        assert done.json()["assisted"] is False

    staff = api(adjudicator)
    me = Annotator.for_user(reviewer_a).name

    def human_vs_model(assisted: str | None) -> tuple[dict, dict]:
        response = staff.get("/api/agreement/", {} if assisted is None else {"assisted": assisted})
        assert response.status_code == 200
        body = response.json()
        rows = {row["b"] if row["a"] == me else row["a"]: row for row in body["report"]["pairs"] if me in (row["a"], row["b"])}
        return rows[gpt.name], body

    excluded, body_default = human_vs_model(None)
    assert body_default["assisted"] == "exclude"  # the default leaves assisted labelings out
    included, body_include = human_vs_model("include")
    assert human_vs_model("exclude")[0]["overall"]["n"] == excluded["overall"]["n"]
    keys = len(taxonomy.active().keys)
    assert excluded["overall"]["n"] == 2 * keys < included["overall"]["n"] == 8 * keys
    assert excluded["overall"]["agreement"] < 1 and included["overall"]["agreement"] > excluded["overall"]["agreement"]
    summary = body_default["report"]["assisted"]
    assert (summary["human_labelings"], summary["assisted_labelings"], summary["left_out"]) == (16, 6, 6)
    assert body_include["report"]["human_human"]["assisted_labelings"] == 6
    assert body_default["report"]["human_human"]["assisted_labelings"] == 0
    only = staff.get("/api/agreement/", {"assisted": "only"}).json()
    assert only["report"]["assisted"]["counted_human_labelings"] == 6
    assert staff.get("/api/agreement/", {"assisted": "some"}).status_code == 400
    assert api(reviewer_a).get("/api/agreement/", {"assisted": "include"}).status_code == 403
