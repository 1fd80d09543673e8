"""Idle drafts without answers give their slot back; drafts with answers and submitted work stay."""
from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from annotations.services import editing, labeling_queue
from annotations.models import Labeling
from core.models import AuditEvent
from tests.support.factories import UserFactory
from tests.support.labeling import claim

pytestmark = pytest.mark.django_db


def _age(labeling, hours):
    Labeling.objects.filter(pk=labeling.pk).update(updated_at=timezone.now() - dt.timedelta(hours=hours))


def test_idle_empty_draft_is_released_and_the_image_goes_back_to_the_queue(make_image, reviewer_a, settings):
    settings.CPRT_LABELINGS_PER_IMAGE = 1
    image = make_image("2017_idle_1")
    idle = claim(reviewer_a)
    other = UserFactory(role="reviewer")
    assert labeling_queue.claim_next(other) is None  # the only slot is held
    _age(idle, 25)
    assert labeling_queue.release_idle_drafts(24) == [image.pk]
    assert not Labeling.objects.filter(pk=idle.pk).exists()
    assert Labeling.history.filter(id=idle.pk, history_type="-").exists()
    assert AuditEvent.objects.filter(action="labeling.release_idle").count() == 1
    assert labeling_queue.claim_next(other).image_id == image.pk


def test_recent_or_answered_drafts_and_submissions_are_kept(make_image, reviewer_a, reviewer_b, settings):
    make_image("2017_idle_2")
    make_image("2017_idle_3")
    recent = claim(reviewer_a)
    _age(recent, 2)
    answered = claim(reviewer_b)
    editing.save_draft(answered, reviewer_b, version=answered.version, values={"age": 1.0}, rationales={})
    _age(answered, 100)
    assert labeling_queue.release_idle_drafts(24) == []
    assert Labeling.objects.filter(pk__in=[recent.pk, answered.pk]).count() == 2
    assert not AuditEvent.objects.filter(action="labeling.release_idle").exists()


def test_the_beat_task_uses_the_setting(make_image, reviewer_a, settings):
    from annotations.tasks import release_idle_drafts
    from cprt_site.celery import app

    assert "annotations.release_idle_drafts" in app.conf.beat_schedule
    image = make_image("2017_idle_4")
    draft = claim(reviewer_a)
    _age(draft, 3)
    settings.CPRT_DRAFT_IDLE_HOURS = 4
    assert release_idle_drafts() == {"released_image_ids": []}
    settings.CPRT_DRAFT_IDLE_HOURS = 2
    assert release_idle_drafts() == {"released_image_ids": [image.pk]}
