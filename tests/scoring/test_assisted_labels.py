"""Assisted labels on the scoring side (issue 38): the profile option that leaves them out of the consensus (shown
where the consensus is described), the review page's marks, the agreement page's ?assisted= filter and downloads,
and the annotations configuration of the dataset export."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import datasets
import pytest
from django.urls import reverse

from annotations.models import Annotator, Batch, Labeling
from annotations.services import editing, labeling_queue
from scoring import cprt_bench, profiles
from scoring.models import ImageScore, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support.labeling import all_answers

pytestmark = pytest.mark.django_db


def submit(user, values: dict) -> Labeling:
    labeling = labeling_queue.claim_next(user)
    return editing.submit(labeling, user, version=labeling.version, values=values, rationales={})


@pytest.fixture
def two_images(make_image, model_annotators, set_labels, reviewer_a, reviewer_b):
    """Image 1 in a batch showing gpt's suggestions (gov_ids = 1); image 2 without. reviewer_b labels both before the
    batch shows suggestions, then reviewer_a (image 1 assisted); both answer gov_ids = 1, everything else 0."""
    gpt, gemini = model_annotators
    batch = Batch.objects.create(name="suggest", show_model_suggestions=True)
    batch.suggestion_annotators.set([gpt])
    first = make_image("2017_s1", color=(1, 1, 1))
    first.batch = batch
    first.save(update_fields=["batch"])
    second = make_image("2017_s2", color=(2, 2, 2))
    for image in (first, second):
        set_labels(image, gpt, {"gov_ids": 1.0})
        set_labels(image, gemini, {"gov_ids": 1.0})
    values = {**all_answers(0.0), "gov_ids": 1.0}
    batch.show_model_suggestions = False  # reviewer_b labels first, without suggestions
    batch.save()
    theirs = [submit(reviewer_b, values), submit(reviewer_b, values)]
    batch.show_model_suggestions = True
    batch.save()
    mine = [submit(reviewer_a, values), submit(reviewer_a, values)]
    by_image = {labeling.image_id: labeling for labeling in mine}
    assert by_image[first.pk].assisted and not by_image[second.pk].assisted
    assert not any(labeling.assisted for labeling in theirs)  # the same answers, without suggestions in view
    return first, second, by_image


def test_a_profile_can_leave_assisted_human_labels_out_of_the_consensus(two_images, reviewer_a, reviewer_b, admin_user):
    first, second, _ = two_images
    profile = ScoringProfile.objects.create(name="humans", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test",
                                            weights=[330, 30, 5, 1])
    a, b = Annotator.for_user(reviewer_a), Annotator.for_user(reviewer_b)
    profile.consensus_annotators.set([a, b])
    recompute_scores(profile)
    assert set(ImageScore.objects.filter(profile=profile).values_list("image_id", flat=True)) == {first.pk, second.pk}
    before = profiles.snapshot(profile)
    profile.exclude_assisted = True
    profile.version += 1
    profile.save()
    result = profiles.record_change(admin_user, profile, before)  # audited, and rescored: it decides which images have one
    assert result == {"scored": 2, "incomplete": 0}
    # Image 1: reviewer_a's assisted labeling abstains; the consensus is reviewer_b's alone (the same answers here).
    assert ImageScore.objects.get(profile=profile, image=first).binary_labels["gov_ids"] == 1
    # With reviewer_b's labeling assisted too, no one is left on image 1: no consensus there; image 2 keeps its own.
    Labeling.objects.filter(image=first, annotator=b).update(assisted=True)
    recompute_scores(profile)
    assert list(ImageScore.objects.filter(profile=profile).values_list("image_id", flat=True)) == [second.pk]
    profile.exclude_assisted = False
    profile.save()
    recompute_scores(profile)
    assert ImageScore.objects.filter(profile=profile).count() == 2
    assert "count in the consensus like any other" in profile.assisted_rule


def test_leaving_assisted_labels_out_changes_a_consensus_they_decided(two_images, reviewer_a, reviewer_b, model_annotators):
    """Unanimity: reviewer_a (assisted) says gov_ids 1 and gpt says 1; without reviewer_a, gemini's 0 decides."""
    first, _, _ = two_images
    gpt, gemini = model_annotators
    gemini.labels.filter(image=first, attribute__key="gov_ids").update(value=0.0)
    profile = ScoringProfile.objects.create(name="mixed", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test",
                                            weights=[330, 30, 5, 1])
    profile.consensus_annotators.set([Annotator.for_user(reviewer_a), gpt])
    recompute_scores(profile, [first.pk])
    assert ImageScore.objects.get(profile=profile, image=first).binary_labels["gov_ids"] == 1
    profile.consensus_annotators.set([Annotator.for_user(reviewer_a), gemini])
    profile.exclude_assisted = True
    profile.save()
    recompute_scores(profile, [first.pk])
    assert ImageScore.objects.get(profile=profile, image=first).binary_labels["gov_ids"] == 0


def test_the_consensus_rule_is_shown_on_the_review_page_with_the_assisted_marks(client_as, adjudicator, two_images, reviewer_a):
    first, _, _ = two_images
    profile = ScoringProfile.active()
    profile.activate()
    page = client_as(adjudicator).get(reverse("scoring:review", kwargs={"image_id": first.pk})).content.decode()
    assert "count in the consensus like any other" in page
    assert f'data-assisted-annotator="human:{reviewer_a.username}"' in page and "openai:gpt-5.1" not in page.split("assisted-note")[1][:40]
    assert "= suggestion" in page
    profile.exclude_assisted = True
    profile.save()
    page = client_as(adjudicator).get(reverse("scoring:review", kwargs={"image_id": first.pk})).content.decode()
    assert "are left out of the consensus" in page


def test_agreement_page_filter_links_and_downloads(client_as, adjudicator, two_images):
    client = client_as(adjudicator)
    page = client.get(reverse("scoring:agreement"))
    assert page.status_code == 200
    body = page.content.decode()
    assert 'data-assisted="exclude"' in body and "1 of 4 submitted human labelings" in body
    assert "?assisted=include" in body and "?assisted=only" in body  # the assisted figures one click away
    rows = list(csv.DictReader(io.StringIO(client.get(reverse("scoring:agreement"), {"format": "csv", "table": "summary"}).content.decode())))
    humans = [r for r in rows if r.get("group") == "human-human"]
    assert humans and humans[0]["human_labels"] == "independent only" and humans[0]["assisted"] == "0"
    assert humans[0]["population"] == "human study images (1)"  # image 1 has one independent human labeling left
    included = json.loads(client.get(reverse("scoring:agreement"), {"format": "json", "assisted": "include"}).content)
    assert included["meta"]["assisted"] == "include"
    refused = client.get(reverse("scoring:agreement"), {"assisted": "sometimes"})
    assert refused.status_code == 400 and "assisted must be exclude, include or only" in refused.content.decode()


def test_the_annotations_export_marks_assisted_rows(tmp_path: Path, two_images, reviewer_a, reviewer_b, model_annotators):
    first, second, _ = two_images
    profile = ScoringProfile.objects.create(name="models", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test",
                                            weights=[330, 30, 5, 1])
    profile.consensus_annotators.set(model_annotators)
    recompute_scores(profile)
    cprt_bench.export_dataset(tmp_path / "hf", ["test"], profile, include_annotations=True)
    ann = datasets.load_dataset(str(tmp_path / "hf"), "annotations", cache_dir=str(tmp_path / "cache"))["test"]
    rows = {(r["id"], r["annotator"]): r for r in ann}
    a = Annotator.for_user(reviewer_a).pk
    gpt = model_annotators[0]
    assisted = rows[("2017_s1", f"human-{a}")]
    assert assisted["assisted"] is True and assisted["suggestions_seen"] == [gpt.name]
    assert assisted["answers_as_suggested"]["gov_ids"] is True and assisted["answers_as_suggested"]["age"] is True
    independent = rows[("2017_s2", f"human-{a}")]
    assert independent["assisted"] is False and independent["suggestions_seen"] == []
    assert set(independent["answers_as_suggested"].values()) == {None}
    assert rows[("2017_s1", gpt.name)]["assisted"] is None  # a model's row is neither
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "Assisted labels:" in card
