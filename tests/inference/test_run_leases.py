"""Every lane of a run is worked by one worker at a time (leases), and the reconciler re-dispatches
only lanes whose lease expired: queued work is never sent twice, a redelivered message whose lane a
live worker holds makes no provider call, and a chunk ends well inside the visibility timeout."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core import jobs
from core.models import AuditEvent
from cprt_site.celery import app
from inference import chunks, launching, leases, lifecycle, prompts
from inference.models import Run, RunLane, RunResult
from inference.selection import Selection
from inference.tasks import run_chunk
from tests.fakes.fixtures import *  # noqa: F401,F403


def spec(concurrency=4, task="judge"):
    return launching.LaunchSpec(
        task=task, provider="openai", model_name="gpt-5.1", strategy="zero_shot" if task == "judge" else "",
        counterfactual_faces=False, prompt_version=prompts.DEFAULT_VERSION[task], selection=Selection(), concurrency=concurrency,
    )


@pytest.fixture
def broker(monkeypatch):
    """Every message sent to the broker, recorded instead of sent: (task name, args, kwargs)."""
    sent = []

    def send_task(name, args=None, kwargs=None, **options):
        sent.append((name, list(args or []), dict(kwargs or {})))

    monkeypatch.setattr(app, "send_task", send_task)
    return sent


def chunk_messages(sent):
    return [(args, kwargs) for name, args, kwargs in sent if name == "inference.run_chunk"]


def age(run, seconds: float):
    """Pretend the run was launched and dispatched `seconds` ago."""
    long_ago = timezone.now() - timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(created_at=long_ago, dispatched_at=long_ago)
    RunLane.objects.filter(run=run).update(dispatched_at=long_ago)


def test_a_queued_run_with_no_worker_is_dispatched_once_over_three_reconciler_ticks(
    openai_server, images, settings, broker, django_capture_on_commit_callbacks
):
    settings.CPRT_RUN_STALE_S = 60
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=4))
    assert len(chunk_messages(broker)) == 1  # one lane (4 <= 16 per lane), one chain
    for tick in range(3):
        age(run, 3600 * (tick + 1))  # queued for an hour, two, three: no worker yet
        report = lifecycle.reconcile()
        assert report["redispatched"] == [], f"tick {tick}: {report}"
    assert len(chunk_messages(broker)) == 1, "queued work must not be sent again"
    assert openai_server.count == 0
    assert not AuditEvent.objects.filter(action="run.redispatch").exists()
    run.refresh_from_db()
    assert run.status == Run.STATUS_QUEUED


def test_a_lane_whose_lease_expired_is_redispatched_once_and_a_live_lane_is_left_alone(
    openai_server, images, settings, broker, django_capture_on_commit_callbacks
):
    settings.CPRT_RUN_STALE_S = 60
    settings.CPRT_RUN_LANE_CONCURRENCY = 2
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=4))  # two lanes of two
    assert len(chunk_messages(broker)) == 2
    lane0, lane1 = leases.lanes_of(run)
    assert sorted(lane0.item_ids + lane1.item_ids) == run.image_ids and not set(lane0.item_ids) & set(lane1.item_ids)
    # Lane 0's worker died holding its lease; lane 1's worker is alive.
    now = timezone.now()
    RunLane.objects.filter(pk=lane0.pk).update(owner="dead-worker", lease_expires_at=now - timedelta(seconds=1))
    RunLane.objects.filter(pk=lane1.pk).update(owner="live-worker", lease_expires_at=now + timedelta(seconds=50))
    Run.objects.filter(pk=run.pk).update(status=Run.STATUS_RUNNING)
    report = lifecycle.reconcile()
    assert report["redispatched"] == [run.pk]
    messages = chunk_messages(broker)
    assert len(messages) == 3
    args, kwargs = messages[-1]
    assert args[0] == run.pk and sorted(args[1]) == sorted(lane0.item_ids) and kwargs.get("lane") == 0
    lane0.refresh_from_db()
    assert lane0.owner == "" and lane0.dispatches == 2  # queued again, held by nobody
    # The next ticks: lane 0 is queued (not expired), lane 1 is live: nothing more is sent.
    for _ in range(3):
        assert lifecycle.reconcile()["redispatched"] == []
    assert len(chunk_messages(broker)) == 3
    assert AuditEvent.objects.filter(action="run.redispatch").count() == 1


def test_a_redelivered_message_whose_lane_is_leased_by_a_live_worker_calls_no_provider(
    openai_server, images, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec())
    (args, kwargs), = chunk_messages(broker)
    lane = RunLane.objects.get(run=run, index=kwargs["lane"])
    RunLane.objects.filter(pk=lane.pk).update(owner="the-first-delivery", lease_expires_at=timezone.now() + timedelta(seconds=60))
    result = run_chunk.run(*args, **kwargs)  # the same message, delivered again
    assert result["skipped"] == "lane leased by a live worker"
    assert openai_server.count == 0 and RunResult.objects.count() == 0
    # The holder's lease expires without renewal: the next delivery takes the lane over and works.
    RunLane.objects.filter(pk=lane.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_chunk.run(*args, **kwargs)["written"] == 5
    assert openai_server.count == 5
    lane.refresh_from_db()
    assert lane.owner == "" and lane.lease_expires_at is None  # released when the chunk ended


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_deliveries_of_one_chunk_at_once_make_one_provider_call_per_image(openai_server, images, broker):
    """The same message run twice side by side (a redelivery racing the original): the lease lets
    one copy work, the other does nothing, so the provider is paid once per image."""
    openai_server.delay = 0.3
    run = launching.launch_run(None, spec(concurrency=2))
    (args, kwargs), = chunk_messages(broker)
    barrier = threading.Barrier(2)
    outputs, errors = [], []

    def deliver():
        try:
            barrier.wait(timeout=30)
            outputs.append(run_chunk.run(*args, **kwargs))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    [t.start() for t in threads]
    [t.join(timeout=60) for t in threads]
    assert not errors, errors
    assert openai_server.count == 5, f"{openai_server.count} provider calls for 5 images"
    assert sorted(RunResult.objects.filter(run=run).values_list("image_id", flat=True)) == run.image_ids
    assert sorted(o.get("skipped", "worked") for o in outputs) == ["lane leased by a live worker", "worked"]
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED


def test_a_worker_that_lost_its_lease_stops(openai_server, images, settings, broker, django_capture_on_commit_callbacks):
    settings.CPRT_RUN_HEARTBEAT_S = 0.1
    openai_server.delay = 0.3
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=1))
    (args, kwargs), = chunk_messages(broker)
    original = jobs.Lease.renew

    def taken_over(self, *args, **kwargs):
        self.queryset.update(owner="the-reconciled-copy")
        return original(self, *args, **kwargs)

    jobs.Lease.renew = taken_over
    try:
        result = run_chunk.run(*args, **kwargs)
    finally:
        jobs.Lease.renew = original
    assert result.get("lease_lost") is True
    assert openai_server.count < 5  # it stopped instead of finishing the chunk
    assert RunLane.objects.get(run=run).owner == "the-reconciled-copy"  # and left the lane to its new holder


def test_chunks_are_sized_from_the_rate_limit(openai_server, images, settings):
    settings.CPRT_RUN_CHUNK_TARGET_S = 600
    settings.OPENAI_MAX_RPM = 120  # 2 requests/s for the whole provider
    assert chunks.size("openai", "judge", width=16, lanes=1) == 1200  # 600 s x 2 images/s
    assert chunks.size("openai", "annotate", width=16, lanes=1) == 600  # two requests per image
    assert chunks.size("openai", "judge", width=16, lanes=4) == 300  # each lane gets a quarter
    settings.OPENAI_MAX_RPM = 12
    assert chunks.size("openai", "judge", width=4, lanes=1) == 120
    settings.OPENAI_MAX_RPM = 0  # no limit: 200 x the width
    assert chunks.size("openai", "judge", width=4, lanes=1) == 800
    assert chunks.deadline_s() < settings.CELERY_TASK_SOFT_TIME_LIMIT < settings.CELERY_TASK_TIME_LIMIT
    assert settings.CELERY_TASK_TIME_LIMIT < settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)


def test_dispatch_splits_a_lane_into_rate_limited_chunks(openai_server, images, settings, broker, django_capture_on_commit_callbacks):
    settings.CPRT_RUN_CHUNK_TARGET_S = 1
    settings.OPENAI_MAX_RPM = 120  # 2 images/s: chunks of 2 images
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=4))
    (args, kwargs), = chunk_messages(broker)  # the chain's first link; the others ride along
    assert len(args[1]) <= 2 and set(args[1]) <= set(run.image_ids)


def test_a_chunk_past_its_deadline_hands_the_rest_to_a_new_task(openai_server, images, settings, broker, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    openai_server.delay = 0.2
    monkeypatch.setattr(chunks, "deadline_s", lambda: 0.3)
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=1))
    (args, kwargs), = chunk_messages(broker)
    with django_capture_on_commit_callbacks(execute=True):
        result = run_chunk.run(*args, **kwargs)
    assert 0 < result["written"] < 5 and result["handed_on"] == 5 - result["written"]
    (rest_args, rest_kwargs) = chunk_messages(broker)[-1]
    assert sorted(rest_args[1]) == sorted(set(run.image_ids) - set(RunResult.objects.values_list("image_id", flat=True)))
    assert rest_kwargs["lane"] == kwargs["lane"]
    assert RunLane.objects.get(run=run).owner == ""  # released: the new task claims it
    monkeypatch.setattr(chunks, "deadline_s", lambda: 600)
    run_chunk.run(*rest_args, **rest_kwargs)
    assert openai_server.count == 5
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED


@pytest.mark.parametrize("lane", [-1, "0", 1.5, 5000, True])
def test_a_chunk_message_with_a_bad_lane_is_refused_and_changes_nothing(images, lane):
    before = (Run.objects.count(), RunLane.objects.count(), RunResult.objects.count())
    with pytest.raises(ValueError, match="lane"):
        run_chunk.run(1, [images[0].pk], None, lane)
    assert (Run.objects.count(), RunLane.objects.count(), RunResult.objects.count()) == before
