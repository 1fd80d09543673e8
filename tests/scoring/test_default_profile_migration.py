"""Migration scoring.0010: the exponential default profile, stored scores recomputed, change audited."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from core.models import AuditEvent
from scoring import engine
from scoring.models import ComputedMetrics, ImageScore, ScoringProfile
from tests.support.factories import ImageFactory

migration = importlib.import_module("scoring.migrations.0010_exponential_default_profile")


@pytest.mark.django_db
def test_default_profile_is_exponential_87_active_and_provisional():
    profile = ScoringProfile.active()
    assert profile.name == "provisional" and profile.provisional
    assert profile.weights == list(engine.EXPONENTIAL_87)
    assert (profile.lo1, profile.lo2, profile.lo3) == (0.8305, 0.50, 0.25)


@pytest.mark.django_db
def test_migration_recomputes_stored_scores_and_records_the_change():
    profile = ScoringProfile.objects.get(name="provisional")
    ScoringProfile.objects.filter(pk=profile.pk).update(weights=[330, 30, 5, 1], lo1=0.75, version=1)
    image = ImageFactory()
    old_level, old_score = engine.severity((1, 10, 0, 0), engine.Bounds.from_inner(0.75, 0.5, 0.25), engine.TIGHT)
    ImageScore.objects.create(image=image, profile=profile, binary_labels={}, n1=1, n2=10, n3=0, n4=0, level=old_level, score=old_score)
    ComputedMetrics.objects.create(key="run-metrics:1:profile:1", fingerprint="x", data={})
    AuditEvent.objects.all().delete()

    migration.forward(apps, None)

    stored = ImageScore.objects.get(image=image, profile=profile)
    assert round(stored.score, 5) == 0.87001 and round(old_score, 5) != 0.87001
    profile.refresh_from_db()
    assert profile.version == 2 and profile.is_active and profile.weights == list(engine.EXPONENTIAL_87)
    assert not ComputedMetrics.objects.exists()
    event = AuditEvent.objects.get(action="profile.default_changed")
    assert event.data["old"]["weights"] == [330, 30, 5, 1] and event.data["scores_recomputed"] == 1


@pytest.mark.django_db
def test_a_fitted_active_profile_stays_active():
    fitted = ScoringProfile.objects.create(name="fitted", lo1=0.9, lo2=0.6, lo3=0.3, provisional=False, source="t", weights=[330, 30, 5, 1])
    fitted.activate()
    migration.forward(apps, None)
    assert ScoringProfile.active().pk == fitted.pk
