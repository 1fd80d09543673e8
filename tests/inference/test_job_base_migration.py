"""Migration inference.0006 (runs on the job base) keeps the data: `total_images` becomes `total`,
`done` is filled from the outcome counts, an ingest claim becomes a lease that expires when the old
claim could be taken over, and an ingested batch holds no lease."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE, AFTER = ("inference", "0005_run_lanes"), ("inference", "0006_runs_on_the_job_base")


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_runs_and_batches_keep_their_data(settings):
    settings.CPRT_BATCH_INGEST_STALE_S = 600
    old = migrate(BEFORE)
    Run, ProviderBatch = old.get_model("inference", "Run"), old.get_model("inference", "ProviderBatch")
    run = Run.objects.create(task="judge", provider="openai", model_name="m", strategy="zero_shot", prompt_version="judge-v2",
                             status="finished", total_images=7, outcome_counts={"ok": 4, "error": 2})
    claimed_at = timezone.now() - timedelta(seconds=100)
    held = ProviderBatch.objects.create(run=run, stage="judge", part=0, ingest_token="tok", ingest_claimed_at=claimed_at)
    done = ProviderBatch.objects.create(run=run, stage="judge", part=1, ingest_token="old", ingest_claimed_at=claimed_at,
                                        ingested_at=timezone.now())
    try:
        new = migrate(AFTER)
        Run, ProviderBatch = new.get_model("inference", "Run"), new.get_model("inference", "ProviderBatch")
        migrated = Run.objects.get(pk=run.pk)
        assert (migrated.total, migrated.done, migrated.status) == (7, 6, "finished")
        held, done = ProviderBatch.objects.get(pk=held.pk), ProviderBatch.objects.get(pk=done.pk)
        assert held.ingest_owner == "tok" and held.ingest_expires_at == claimed_at + timedelta(seconds=600)
        assert done.ingest_owner == "" and done.ingest_expires_at is None
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
