"""Races with real threads and transactions: one reviewer's parallel claims, two first adjudications.

Each test runs on both backends (CI runs the suite on SQLite and on PostgreSQL). SQLite's IMMEDIATE
transactions serialise writers, so a race that needs two transactions to read before either writes
cannot happen there; such a test says so and skips on SQLite.
"""
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.urls import reverse

from annotations.models import Adjudication, Labeling
from core.models import AuditEvent
from scoring.services import adjudication
from scoring.models import ImageScore, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.conftest import make_user
from tests.support.permission_cases.scoring import label_everything, make_images

from annotations.services import labeling_queue

# keep the migrated taxonomy and profile for later tests
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def at_once(n: int, work) -> tuple[list, list]:
    """Run work(i) in n threads released together, each with its own database connection."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def run(i):
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:  # reported by the caller
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results, errors


def test_ten_parallel_claims_by_one_reviewer_give_one_draft(make_image):
    for i in range(12):
        make_image(f"2017_3000{i:04d}", color=(i, 3, 9))
    reviewer = make_user("ra", "reviewer")
    results, errors = at_once(10, lambda i: labeling_queue.claim_next(reviewer))
    assert not errors, errors
    drafts = Labeling.objects.filter(annotator__user=reviewer)
    assert drafts.count() == 1, f"{connection.vendor}: {drafts.count()} drafts for one reviewer"
    assert {labeling.pk for labeling in results} == {drafts.get().pk}  # every tab opens the same draft


def test_ten_parallel_next_image_requests_over_http_give_one_draft(make_image, client):
    for i in range(12):
        make_image(f"2017_3100{i:04d}", color=(i, 4, 9))
    reviewer = make_user("ra", "reviewer")
    from django.test import Client

    def request(i):
        c = Client()
        c.force_login(reviewer)
        return c.post(reverse("annotations:next_image")).status_code

    # Logins happen in the threads: force_login writes a session row per client.
    results, errors = at_once(10, request)
    assert not errors, errors
    assert all(code == 302 for code in results), results
    assert Labeling.objects.filter(annotator__user=reviewer).count() == 1


@pytest.fixture
def disputed(model_annotators):
    image = make_images(1, prefix="2017_82", with_published=False)[0]
    gpt, gem = model_annotators
    label_everything([image], gpt, lambda i, k: 1.0 if k in ("gov_ids", "age") else 0.0)
    label_everything([image], gem, lambda i, k: 1.0 if k == "age" else 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    return image


@pytest.fixture
def both_read_before_either_writes(monkeypatch):
    """Hold each adjudication's first insert until both requests have read 'no adjudication yet' (the
    race that concurrent requests hit by chance, made certain)."""
    both = threading.Barrier(2)
    original = Adjudication.save

    def save(self, *args, **kwargs):
        if self.pk is None:
            both.wait(timeout=30)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Adjudication, "save", save)


def _skip_on_sqlite():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's IMMEDIATE transactions serialise the two writers: the second never reads 'no adjudication yet'")


def _try(fn):
    try:
        return fn()
    except adjudication.AdjudicationConflict as exc:
        return exc


def test_two_first_adjudications_end_with_one_winner_and_a_clean_answer(disputed, both_read_before_either_writes):
    _skip_on_sqlite()
    users = [make_user("adj1", "adjudicator"), make_user("adj2", "adjudicator")]
    attribute = adjudication.active_attributes()["gov_ids"]
    values = [1.0, 0.5]
    results, errors = at_once(2, lambda i: _try(lambda: adjudication.adjudicate(users[i], disputed, attribute, values[i], f"by {i}")))
    assert not errors, errors  # the old code: IntegrityError for the loser
    winners = [r for r in results if isinstance(r, Adjudication)]
    losers = [r for r in results if isinstance(r, adjudication.AdjudicationConflict)]
    assert len(winners) == 1 and len(losers) == 1, results
    stored = Adjudication.objects.get(image=disputed, attribute=attribute)
    assert (stored.value, stored.adjudicator_id) == (winners[0].value, winners[0].adjudicator_id)
    assert "at the same time" in losers[0].message and f": {stored.value:g}." in losers[0].message
    assert AuditEvent.objects.filter(action="adjudicate").count() == 1
    assert Adjudication.history.count() == 1
    assert ImageScore.objects.get(image=disputed).binary_labels["gov_ids"] == (1 if stored.value == 1.0 else 0)


def test_two_first_adjudications_from_the_page_give_one_redirect_and_one_409(disputed, both_read_before_either_writes):
    _skip_on_sqlite()
    from django.test import Client

    users = [make_user("adj1", "adjudicator"), make_user("adj2", "adjudicator")]
    url = reverse("scoring:adjudicate", args=[disputed.pk])
    clients = []
    for user in users:
        c = Client()
        c.force_login(user)
        clients.append(c)
    results, errors = at_once(2, lambda i: clients[i].post(url, {"attribute": "gov_ids", "value": ["1", "0"][i], "note": ""}))
    assert not errors, errors
    codes = sorted(r.status_code for r in results)
    assert codes == [302, 409], codes
    loser = next(r for r in results if r.status_code == 409)
    assert "at the same time" in loser.content.decode() and "was not saved" in loser.content.decode()
    assert Adjudication.objects.filter(image=disputed).count() == 1
    assert AuditEvent.objects.filter(action="adjudicate").count() == 1
