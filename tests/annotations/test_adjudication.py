"""Adjudication: a staff member's final word on one (image, attribute); labels stay untouched."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.models import Adjudication, Label

from core.models import AuditEvent
from scoring.models import ImageScore, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support.permission_cases.scoring import label_everything, make_images


@pytest.fixture
def disputed(model_annotators):
    """One image on which the two consensus models disagree about gov_ids (consensus: 0)."""
    image = make_images(1, prefix="2017_81", with_published=False)[0]
    gpt, gem = model_annotators
    label_everything([image], gpt, lambda i, k: 1.0 if k in ("gov_ids", "age") else 0.0)
    label_everything([image], gem, lambda i, k: 1.0 if k == "age" else 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    return image


def state(image):
    return (
        sorted(Label.objects.filter(image=image).values_list("annotator_id", "attribute__key", "value")),
        list(Adjudication.objects.filter(image=image).values_list("attribute__key", "value", "note")),
        Adjudication.history.count(),
        AuditEvent.objects.filter(action="adjudicate").count(),
        list(ImageScore.objects.filter(image=image).values_list("level", "score")),
    )


def test_adjudication_overrides_consensus_and_rescoring_is_immediate(client_as, adjudicator, disputed):
    before = ImageScore.objects.get(image=disputed)
    assert before.level == 3 and before.binary_labels["gov_ids"] == 0
    labels_before = state(disputed)[0]
    url = reverse("scoring:adjudicate", args=[disputed.pk])
    response = client_as(adjudicator).post(url, {"attribute": "gov_ids", "value": "1", "note": "passport visible"})
    assert response.status_code == 302 and response["Location"] == reverse("scoring:review", args=[disputed.pk])
    after = ImageScore.objects.get(image=disputed)
    assert after.level == 1 and after.binary_labels["gov_ids"] == 1 and after.score > before.score
    adjudication = Adjudication.objects.get(image=disputed)
    assert (adjudication.value, adjudication.note, adjudication.adjudicator) == (1.0, "passport visible", adjudicator)
    assert state(disputed)[0] == labels_before  # labels never change
    event = AuditEvent.objects.get(action="adjudicate")
    assert event.actor == adjudicator and event.data["attribute"] == "gov_ids" and event.data["old"] is None
    assert event.data["new"] == {"value": 1.0, "note": "passport visible"}
    history = Adjudication.history.get()
    assert history.history_user == adjudicator and history.history_type == "+"

    # A second decision updates the same row, is recorded again and rescored again.
    client_as(adjudicator).post(url, {"attribute": "gov_ids", "value": "0.5", "note": "only partly visible"})
    assert Adjudication.objects.filter(image=disputed).count() == 1
    assert Adjudication.history.count() == 2
    assert AuditEvent.objects.filter(action="adjudicate").latest("created_at").data["old"] == {"value": 1.0, "note": "passport visible"}
    assert ImageScore.objects.get(image=disputed).level == 3
    page = client_as(adjudicator).get(reverse("scoring:review", args=[disputed.pk]))
    assert b"only partly visible" in page.content


def test_adjudicated_item_leaves_the_disagreement_queue(client_as, admin_user, disputed):
    client = client_as(admin_user)
    queue = client.get(reverse("scoring:disagreements"), {"format": "json"}).json()["tables"]["disagreements"]["rows"]
    assert [r["disputed"] for r in queue] == [["gov_ids"]]
    client.post(reverse("scoring:adjudicate", args=[disputed.pk]), {"attribute": "gov_ids", "value": "0"})
    queue = client.get(reverse("scoring:disagreements"), {"format": "json"}).json()["tables"]["disagreements"]["rows"]
    assert queue == []


@pytest.mark.parametrize("data", [
    {"attribute": "gov_ids", "value": "2"},
    {"attribute": "gov_ids", "value": "0.7"},
    {"attribute": "gov_ids", "value": ""},
    {"attribute": "gov_ids"},
    {"attribute": "social_security", "value": "1"},
    {"attribute": "", "value": "1"},
    {"value": "1"},
    {"attribute": "gov_ids", "value": "1", "note": "x" * 2001},
])
def test_bad_adjudications_are_refused_without_changes(client_as, adjudicator, disputed, data):
    before = state(disputed)
    response = client_as(adjudicator).post(reverse("scoring:adjudicate", args=[disputed.pk]), data)
    assert response.status_code == 400
    assert b"Nothing was changed" in response.content
    assert state(disputed) == before


def test_reviewers_cannot_adjudicate(client_as, reviewer_a, disputed):
    before = state(disputed)
    response = client_as(reviewer_a).post(reverse("scoring:adjudicate", args=[disputed.pk]), {"attribute": "gov_ids", "value": "1"})
    assert response.status_code == 403
    assert client_as(reviewer_a).get(reverse("scoring:review", args=[disputed.pk])).status_code == 403
    assert state(disputed) == before


def test_get_is_not_allowed_and_unknown_image_is_404(client_as, adjudicator, disputed):
    client = client_as(adjudicator)
    assert client.get(reverse("scoring:adjudicate", args=[disputed.pk])).status_code == 405
    assert client.post(reverse("scoring:adjudicate", args=[999999]), {"attribute": "gov_ids", "value": "1"}).status_code == 404
