"""The review page's links and defaults: previous/next disputed image, history link, "set final label"
selects on the current final label (not 0); the history page lists adjudications."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from scoring.models import ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support.permission_cases.scoring import label_everything, make_images

pytestmark = pytest.mark.django_db


@pytest.fixture
def disputed_pair(model_annotators):
    images = make_images(2, prefix="2017_82", with_published=False)
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k in ("gov_ids", "age") else 0.0)
    label_everything(images, gem, lambda i, k: 1.0 if k == "age" else 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    return images


def _selected(html: str, key: str) -> str:
    select = re.search(rf'<select name="value" aria-label="final label of {key}">(.*?)</select>', html, re.S).group(1)
    return re.search(r'<option value="([^"]*)" selected>', select).group(1)


def test_review_defaults_to_the_current_final_label_and_links_neighbours_and_history(client_as, adjudicator, disputed_pair):
    first, second = disputed_pair
    client = client_as(adjudicator)
    html = client.get(reverse("scoring:review", args=[first.pk])).content.decode()
    assert _selected(html, "age") == "1" and _selected(html, "gov_ids") == "0"  # the consensus, not a blanket 0
    assert f'href="{reverse("annotations:image_history", args=[first.pk])}"' in html
    links = {re.search(r'href="/scoring/images/(\d+)/review/" rel="(prev|next)"', m).group(2): int(re.search(r"images/(\d+)/", m).group(1))
             for m in re.findall(r'<a href="/scoring/images/\d+/review/" rel="(?:prev|next)"', html)}
    assert set(links.values()) <= {second.pk} and links  # one neighbour, the other disputed image
    client.post(reverse("scoring:adjudicate", args=[first.pk]), {"attribute": "gov_ids", "value": "0.5", "note": "partly"})
    html = client.get(reverse("scoring:review", args=[first.pk])).content.decode()
    assert _selected(html, "gov_ids") == "0.5"
    history = client.get(reverse("annotations:image_history", args=[first.pk])).content.decode()
    table = re.search(r'<table class="history adjudications">(.*?)</table>', history, re.S).group(1)
    assert "gov_ids" in table and "partly" in table and "adjudicator" in table and "0.5" in table


def test_extremes_are_split_by_the_sign_of_the_error():
    from scoring.tables import extremes_table

    rows = [{"error": e, "image": str(i)} for i, e in enumerate([-0.3, -0.1, 0.0, 0.05, 0.2])]
    table = extremes_table(rows, k=10)
    kinds = {}
    for row in table.rows:
        kinds.setdefault(row["kind"], []).append(row["error"])
    assert kinds == {"under-estimated": [-0.3, -0.1], "over-estimated": [0.2, 0.05]}


def test_favicon_is_served_and_a_failed_login_keeps_the_user_name(client, reviewer_a):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and "favicon" in response["Location"]
    page = client.post(reverse("login"), {"username": "reviewer_a", "password": "wrong"}).content.decode()
    assert 'name="username"' in page and 'value="reviewer_a"' in page


DISPUTES = [("gov_ids", "location"), ("full_legal_name",), ("age",), ("documents",)]


def _next(html: str) -> int | None:
    found = re.search(r'href="/scoring/images/(\d+)/review/" rel="next"', html)
    return int(found.group(1)) if found else None


def test_next_follows_the_order_the_adjudicator_entered_until_refreshed(client_as, adjudicator, model_annotators):
    from scoring.review_views import entered_order

    images = make_images(4, prefix="2017_81", with_published=False)
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k in DISPUTES[i] else 0.0)
    label_everything(images, gem, lambda i, k: 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    client = client_as(adjudicator)
    first = client.get(reverse("scoring:review", args=[images[0].pk])).content.decode()
    assert "disputed image 1 of 4" in first and _next(first) == images[1].pk
    client.post(reverse("scoring:adjudicate", args=[images[0].pk]), {"attribute": "gov_ids", "value": "0", "note": ""})
    live = entered_order(profile)
    assert live[0] != images[0].pk  # the image moved down the live queue
    after = client.get(reverse("scoring:review", args=[images[0].pk])).content.decode()
    assert "disputed image 1 of 4" in after and _next(after) == images[1].pk  # the entered order holds
    refreshed = client.get(reverse("scoring:review", args=[images[0].pk]) + "?queue=refresh").content.decode()
    at = live.index(images[0].pk)
    assert f"disputed image {at + 1} of 4" in refreshed
    assert _next(refreshed) == (live[at + 1] if at + 1 < len(live) else None)
    assert client.session["adjudication_queue"]["ids"] == live


def test_a_refused_adjudication_leaves_the_entered_order_alone(client_as, adjudicator, disputed_pair):
    first, second = disputed_pair
    client = client_as(adjudicator)
    client.get(reverse("scoring:review", args=[first.pk]))
    frozen = client.session["adjudication_queue"]
    response = client.post(reverse("scoring:adjudicate", args=[first.pk]), {"attribute": "gov_ids", "value": "7"})
    assert response.status_code == 400
    assert client.session["adjudication_queue"] == frozen
