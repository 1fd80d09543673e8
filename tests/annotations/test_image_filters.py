"""The Images page: filters (split, dataset version, consensus level and attribute, annotator coverage,
VISPR label), search by id, page size; the blind rule for reviewers; bad filters refused."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.datasets.models import DatasetVersion
from annotations.models import Annotator, Labeling
from scoring.models import ImageScore, ScoringProfile
from scoring.services import scores


@pytest.fixture
def world(make_image, model_annotators, set_labels, reviewer_a):
    """Four images: two with a consensus (level set by gov_ids), one in a dataset version, VISPR labels."""
    imgs = [make_image("2017_f1", split="test"), make_image("2017_f2", split="train", color=(1, 2, 3)),
            make_image("2017_f3", split="train", color=(3, 2, 1)), make_image("2018_f4", split="test", color=(9, 9, 9))]
    imgs[0].vispr_labels = ["a17_color", "a4_gender"]
    imgs[0].save(update_fields=["vispr_labels"])
    imgs[3].vispr_labels = ["a4_gender"]
    imgs[3].save(update_fields=["vispr_labels"])
    gpt, gemini = model_annotators
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gemini])
    profile.activate()
    for annotator in (gpt, gemini):
        set_labels(imgs[0], annotator, {"gov_ids": 1.0})
        set_labels(imgs[1], annotator)
    scores.recompute_scores(profile)
    version = DatasetVersion.objects.create(name="pilot-v1")
    version.members.set([imgs[1], imgs[2]])
    # reviewer_a submitted a labeling of image 2 only.
    mine = Annotator.for_user(reviewer_a)
    set_labels(imgs[1], mine)
    Labeling.objects.create(image=imgs[1], annotator=mine, status=Labeling.STATUS_SUBMITTED)
    return imgs, version


def shown(client, **query) -> list[str]:
    response = client.get(reverse("home"), query)
    assert response.status_code == 200, response.content.decode()[:500]
    return [r["image"].vispr_id for r in response.context["rows"]]


def test_staff_filter_by_everything(client_as, adjudicator, world):
    imgs, version = world
    client = client_as(adjudicator)
    assert shown(client) == ["2017_f1", "2017_f2", "2017_f3", "2018_f4"]
    assert shown(client, split="test") == ["2017_f1", "2018_f4"]
    assert shown(client, dataset=version.pk) == ["2017_f2", "2017_f3"]
    assert shown(client, vispr_label="a4_gender") == ["2017_f1", "2018_f4"]
    assert shown(client, vispr_label="a17_color", split="test") == ["2017_f1"]
    assert shown(client, vispr_label="a99_none") == []
    assert shown(client, q="2018") == ["2018_f4"]
    level = ImageScore.objects.get(image=imgs[0], profile=ScoringProfile.active()).level
    assert shown(client, level=level) == ["2017_f1"]
    assert shown(client, attribute="gov_ids") == ["2017_f1"]
    assert shown(client, coverage="models") == ["2017_f1", "2017_f2"]
    assert shown(client, coverage="none") == ["2017_f1", "2017_f3", "2018_f4"]
    assert shown(client, coverage="partial") == ["2017_f2"]  # one of the two human labelings needed
    page = client.get(reverse("home"), {"split": "test"}).content.decode()
    assert "2 images match these filters" in page and "clear filters" in page


def test_page_size_and_pager_keep_the_filters(client_as, adjudicator, make_image, world):
    for i in range(60):
        make_image(f"2019_p{i:02d}", split="other", color=(i, 0, 0))
    client = client_as(adjudicator)
    response = client.get(reverse("home"), {"split": "other"})
    assert len(response.context["rows"]) == 48 and "split=other&amp;page=2" in response.content.decode()
    assert len(client.get(reverse("home"), {"split": "other", "page": 2}).context["rows"]) == 12
    assert len(client.get(reverse("home"), {"split": "other", "page_size": 96}).context["rows"]) == 60


def test_reviewers_filter_by_consensus_only_among_their_own_and_never_by_attribute(client_as, reviewer_a, world):
    client = client_as(reviewer_a)
    imgs, _ = world
    level_f1 = ImageScore.objects.get(image=imgs[0], profile=ScoringProfile.active()).level
    level_f2 = ImageScore.objects.get(image=imgs[1], profile=ScoringProfile.active()).level
    assert shown(client, level=level_f2) == ["2017_f2"]  # the one they submitted
    if level_f1 != level_f2:
        assert shown(client, level=level_f1) == []  # f1's consensus is hidden from them
    response = client.get(reverse("home"), {"attribute": "gov_ids"})
    assert response.status_code == 400 and "Unknown filter(s): attribute" in response.content.decode()
    assert 'name="attribute"' not in client.get(reverse("home")).content.decode()


@pytest.mark.parametrize("query, message", [
    ({"split": "validation"}, "Select a valid choice"),
    ({"level": "5"}, "Select a valid choice"),
    ({"dataset": "999999"}, "Select a valid choice"),
    ({"attribute": "not_a_key"}, "Select a valid choice"),
    ({"coverage": "most"}, "Select a valid choice"),
    ({"vispr_label": "a17 color; drop"}, "letters, digits"),
    ({"q": "x" * 65}, "at most 64 characters"),
    ({"page_size": "100000"}, "Select a valid choice"),
    ({"page": "0"}, "greater than or equal to 1"),
    ({"colour": "red"}, "Unknown filter(s): colour"),
])
def test_bad_filters_are_refused_with_a_message(client_as, adjudicator, world, query, message):
    response = client_as(adjudicator).get(reverse("home"), query)
    assert response.status_code == 400 and message in response.content.decode()
    assert response.context["rows"] == []


# --- issue 38: filters derived from others' labels (VISPR label, dataset version, coverage) are blind -----------


def test_a_reviewer_who_labelled_nothing_gets_no_image_from_vispr_label_or_dataset_filters(client_as, reviewer_b, world):
    """`2017_f1` carries VISPR label a17_color (so the `vispr` annotator's mapped labels); `pilot-v1` holds f2 and f3.
    A reviewer with nothing submitted learns nothing from these filters: no match, for every filter value."""
    _, version = world
    client = client_as(reviewer_b)
    passport = DatasetVersion.objects.create(name="a17-colour-only")
    passport.members.set([world[0][0]])
    assert shown(client) == ["2017_f1", "2017_f2", "2017_f3", "2018_f4"]  # the plain list is not blind
    for query in ({"vispr_label": "a17_color"}, {"vispr_label": "a4_gender"}, {"dataset": version.pk}, {"dataset": passport.pk},
                  {"coverage": "none"}, {"coverage": "partial"}, {"coverage": "complete"}, {"coverage": "models"}):
        assert shown(client, **query) == [], query
    page = client.get(reverse("home")).content.decode()
    assert "look only at the images you have submitted" in page


def test_a_reviewer_filters_by_vispr_label_dataset_and_coverage_among_their_submitted_images(client_as, reviewer_a, adjudicator, world):
    imgs, version = world
    imgs[1].vispr_labels = ["a4_gender"]
    imgs[1].save(update_fields=["vispr_labels"])
    client = client_as(reviewer_a)  # submitted 2017_f2 only
    assert shown(client, vispr_label="a4_gender") == ["2017_f2"]  # f1 and f4 carry it too, unsubmitted
    assert shown(client, dataset=version.pk) == ["2017_f2"]  # f3 is a member too
    assert shown(client, coverage="models") == ["2017_f2"]  # f1 has model labels too
    assert shown(client, coverage="none") == []
    assert shown(client, coverage="partial") == ["2017_f2"]
    staff = client_as(adjudicator)
    assert shown(staff, vispr_label="a4_gender") == ["2017_f1", "2017_f2", "2018_f4"]
    assert shown(staff, dataset=version.pk) == ["2017_f2", "2017_f3"]


def test_every_filter_from_others_labels_goes_through_the_blind_module():
    from annotations import blind
    from annotations.forms import ImageFilterForm

    fields = set(ImageFilterForm(staff=True).fields)
    derived = {"level", "attribute", "vispr_label", "dataset", "coverage"}
    assert derived <= fields and set(blind.OTHERS_LABEL_FILTERS) == derived
    assert blind.others_label_filters({"q": "2017", "split": "test", "page_size": 48}) == []
    assert blind.others_label_filters({"coverage": "none", "vispr_label": ""}) == ["coverage"]
