"""Migration inference.0008 (run items) keeps the data: an existing run's items are its images
(`item_ids` = `image_ids`), its results and batch requests get item id = image id, lanes keep their
dealt ids, and the new uniqueness holds (one result per run and item; results of two items may
share an image)."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE, AFTER = ("inference", "0007_run_task_is_a_kind"), ("inference", "0008_run_items")


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_runs_results_and_requests_become_items():
    from annotations.models import Image  # today's model: its table is as today's (only inference goes back)

    old = migrate(BEFORE)
    Run, RunResult, RunLane = (old.get_model("inference", n) for n in ("Run", "RunResult", "RunLane"))
    ProviderBatch, BatchRequest = old.get_model("inference", "ProviderBatch"), old.get_model("inference", "BatchRequest")
    images = [Image.objects.create(vispr_id=f"2017_mig{i}", sha256=f"{i:064d}") for i in range(3)]
    ids = [i.pk for i in images]
    run = Run.objects.create(task="judge", provider="openai", model_name="m", strategy="zero_shot", prompt_version="judge-v2",
                             status="finished", image_ids=list(reversed(ids)), total=3)
    RunResult.objects.create(run=run, image_id=ids[0], outcome="ok", score=0.5)
    RunLane.objects.create(run=run, index=0, image_ids=ids)
    batch = ProviderBatch.objects.create(run=run, stage="judge")
    BatchRequest.objects.create(run=run, image_id=ids[1], stage="judge", batch=batch)
    try:
        new = migrate(AFTER)
        Run, RunResult, RunLane = (new.get_model("inference", n) for n in ("Run", "RunResult", "RunLane"))
        BatchRequest = new.get_model("inference", "BatchRequest")
        migrated = Run.objects.get(pk=run.pk)
        assert migrated.item_ids == sorted(ids) and migrated.options == {}
        assert RunResult.objects.get(run_id=run.pk).item_id == ids[0]
        assert BatchRequest.objects.get(run_id=run.pk).item_id == ids[1]
        assert RunLane.objects.get(run_id=run.pk).item_ids == ids
        RunResult.objects.create(run_id=run.pk, item_id=999, image_id=ids[0], outcome="ok")  # a second item of one image
        with pytest.raises(IntegrityError), transaction.atomic():
            RunResult.objects.create(run_id=run.pk, item_id=999, image_id=ids[1], outcome="ok")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
