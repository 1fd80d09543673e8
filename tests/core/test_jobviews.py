"""Every kind of job polls its progress through the one progress view of the job base
(core/jobviews.progress_view): the same access, method and rendering rules for runs, exports,
imports, dataset builds and face anonymization."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import resolve, reverse

from annotations.datasets.views import BUILD_CARD
from annotations.faces.views import FACES_CARD
from inference.views import RUN_CARD
from scoring.import_views import IMPORT_CARD
from scoring.views import EXPORT_CARD

ROOT = Path(__file__).resolve().parents[2]
CARDS = [RUN_CARD, EXPORT_CARD, IMPORT_CARD, BUILD_CARD, FACES_CARD]


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.progress_url)
def test_each_kinds_progress_url_is_the_one_progress_view(card):
    view = resolve(reverse(card.progress_url, args=[1])).func
    assert getattr(view, "job_card", None) is card


def test_no_view_module_renders_the_card_by_itself():
    renderers = [str(p.relative_to(ROOT)) for package in ("core", "annotations", "inference", "scoring", "benchmarks")
                 for p in (ROOT / package).rglob("*.py") if "jobviews.progress(" in p.read_text()]
    assert renderers == []


@pytest.mark.django_db
@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.progress_url)
def test_the_progress_view_answers_404_for_an_unknown_job_and_405_to_a_post(client_as, admin_user, card):
    client = client_as(admin_user)
    assert client.get(reverse(card.progress_url, args=[987654])).status_code == 404
    assert client.post(reverse(card.progress_url, args=[987654])).status_code == 405
