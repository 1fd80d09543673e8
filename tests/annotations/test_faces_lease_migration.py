"""Migration annotations.0006: a face job's claim token became its lease owner; an active job claimed
before the upgrade gets an expiry (last heartbeat + CPRT_FACES_STALE_S), so its worker keeps it while
alive and the reconciler re-queues it once that lease runs out, as the silence rule did before."""
from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from annotations.faces import jobs
from annotations.faces.models import AnonymizationJob

migration = importlib.import_module("annotations.migrations.0006_anonymization_job_on_the_job_base")


@pytest.mark.django_db
def test_claimed_jobs_get_a_lease_that_expires_after_their_last_heartbeat(settings):
    settings.CPRT_FACES_STALE_S = 120
    beat = timezone.now() - timedelta(seconds=30)
    running = AnonymizationJob.objects.create(image_ids=[1], total=1, status="running", lease_owner="a1b2c3", heartbeat_at=beat)
    finished = AnonymizationJob.objects.create(image_ids=[1], total=1, status="finished", lease_owner="d4e5f6", heartbeat_at=beat)
    queued = AnonymizationJob.objects.create(image_ids=[1], total=1)

    migration.give_claims_an_expiry(apps, None)

    running.refresh_from_db()
    assert running.lease_owner == "a1b2c3" and running.lease_expires_at == beat + timedelta(seconds=120)
    assert AnonymizationJob.objects.get(pk=finished.pk).lease_expires_at is None
    assert AnonymizationJob.objects.get(pk=queued.pk).lease_expires_at is None
    assert jobs.claim(running.pk) is None and jobs.reconcile() == []  # its worker still holds it
    AnonymizationJob.objects.filter(pk=running.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert jobs.reconcile() == [running.pk]
