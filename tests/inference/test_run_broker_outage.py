"""A run's messages survive a broker outage: a send the broker refuses (a launch, a chunk handing on)
leaves its lane marked unsent and the reconciler sends it once the broker answers; a Redis that
came back empty (its queued messages lost) makes the reconciler send every unclaimed lane again,
once; and `launch_run --here` waits out a Redis outage instead of stopping after an empty chunk.

The Redis involved is a private redis-server on a free port (tests/support/redis_server.py)."""
from __future__ import annotations

import io
import json
import os
import threading
import time

import kombu.exceptions
import pytest
from django.core.management import call_command

from core.models import AuditEvent
from cprt_site.celery import app
from inference import launching, leases, lifecycle, prompts
from inference.execution import run_chunk
from inference.models import Run, RunLane, RunResult
from inference.selection import Selection
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.redis_server import REDIS_SERVER, PrivateRedis

needs_redis = pytest.mark.skipif(not os.path.exists(REDIS_SERVER), reason="redis-server is not installed")


def spec(concurrency=4):
    return launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, prompts.DEFAULT_VERSION["judge"], Selection(), concurrency)


class Broker:
    """Messages recorded instead of sent (task name, args, kwargs); `down` makes every send fail as
    celery's does when Redis does not answer."""

    def __init__(self):
        self.sent, self.down = [], False

    def send_task(self, name, args=None, kwargs=None, **options):
        if self.down:
            raise kombu.exceptions.OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        self.sent.append((name, list(args or []), dict(kwargs or {})))

    def chunks(self):
        return [(args, kwargs) for name, args, kwargs in self.sent if name == "inference.run_chunk"]


@pytest.fixture
def broker(monkeypatch):
    recorder = Broker()
    monkeypatch.setattr(app, "send_task", recorder.send_task)
    return recorder


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(tmp_path).start()
    yield server
    server.kill()


def test_a_launch_while_the_broker_is_down_is_sent_by_the_reconciler_once_it_is_back(
    openai_server, images, settings, broker, django_capture_on_commit_callbacks, monkeypatch
):
    from core import broker as core_broker

    # Refused sends only: the broker did not lose messages (on Redis, whether the shared server's
    # marker key is there depends on other tests; an emptied broker is tested with a private Redis).
    monkeypatch.setattr(core_broker, "emptied_at", lambda timeout=1.0: None)
    settings.CPRT_RUN_LANE_CONCURRENCY = 2
    broker.down = True
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=4))  # two lanes; the on-commit sends fail, the launch does not
    assert broker.chunks() == [] and Run.objects.get(pk=run.pk).status == Run.STATUS_QUEUED
    assert list(RunLane.objects.filter(run=run).values_list("dispatched_at", flat=True)) == [None, None]  # marked unsent

    assert lifecycle.reconcile()["redispatched"] == [run.pk]  # still down: tried, still unsent
    assert broker.chunks() == [] and RunLane.objects.filter(run=run, dispatched_at__isnull=True).count() == 2

    broker.down = False
    assert lifecycle.reconcile()["redispatched"] == [run.pk]
    assert sorted(kwargs["lane"] for _, kwargs in broker.chunks()) == [0, 1]  # one message per lane
    assert lifecycle.reconcile()["redispatched"] == []  # sent now: queued work, never sent again
    assert len(broker.chunks()) == 2
    event = AuditEvent.objects.filter(action="run.redispatch", target_id=str(run.pk)).last()
    assert event.data["unsent"] == [0, 1] and event.data["broker_emptied"] is False


def test_a_chunk_that_cannot_hand_on_leaves_its_lane_unsent_and_the_reconciler_sends_the_rest(
    openai_server, images, settings, broker, django_capture_on_commit_callbacks
):
    settings.CPRT_RUN_CHUNK_TARGET_S = 1
    settings.OPENAI_MAX_RPM = 120  # 2 images/s: chunks of 2 images
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=1))
    (args, kwargs), = broker.chunks()
    broker.down = True  # the broker goes away while the chunk works
    report = run_chunk(*args, **kwargs)
    assert report["written"] == len(args[1]) < len(images) and report["hand_on_unsent"] == len(images) - len(args[1])
    lane = RunLane.objects.get(run=run)
    assert (lane.owner, lane.dispatched_at) == ("", None)  # released, and known to have no message out
    broker.down = False
    assert lifecycle.reconcile()["redispatched"] == [run.pk]
    (_, (args, kwargs)) = broker.chunks()
    assert set(args[1]) <= set(leases.missing_of(lane)) and kwargs == {"lane": 0}
    assert openai_server.count == report["written"]


@needs_redis
def test_queued_lanes_are_sent_again_once_when_the_broker_came_back_empty(
    openai_server, images, settings, broker, private_redis, django_capture_on_commit_callbacks
):
    settings.CELERY_BROKER_URL = private_redis.url  # what core.broker asks (the sends themselves are recorded)
    settings.CPRT_RUN_LANE_CONCURRENCY = 2
    time.sleep(1.1)  # Redis counts its uptime in whole seconds: launch after its first one
    with django_capture_on_commit_callbacks(execute=True):
        run = launching.launch_run(None, spec(concurrency=4))
    assert len(broker.chunks()) == 2
    assert lifecycle.reconcile()["redispatched"] == []  # queued work is not sent twice while the broker keeps it

    private_redis.kill()
    assert lifecycle.reconcile()["redispatched"] == []  # down: nothing to learn
    private_redis.start()  # back, without its data: both queued messages are gone
    assert lifecycle.reconcile()["redispatched"] == [run.pk]
    assert sorted(kwargs["lane"] for _, kwargs in broker.chunks()[2:]) == [0, 1]
    assert lifecycle.reconcile()["redispatched"] == []  # once
    assert len(broker.chunks()) == 4
    event = AuditEvent.objects.filter(action="run.redispatch", target_id=str(run.pk)).get()
    assert event.data["broker_emptied"] is True and event.data["lanes"] == [0, 1]
    assert openai_server.count == 0


@needs_redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_launch_here_waits_out_a_redis_outage_and_finishes(openai_server, images, settings, broker, private_redis):
    """The rate limiter's Redis is down when `--here` starts: every chunk defers its images and
    ends empty; the lanes try again after growing pauses, saying so, and finish once Redis is back."""
    settings.CPRT_RATE_LIMIT_URL = private_redis.url
    settings.OPENAI_MAX_RPM = 6000
    settings.CPRT_RUN_CHUNK_TARGET_S = 0.3  # a chunk gives up on its deferred images after 0.6 s
    settings.CPRT_RUN_LANE_CONCURRENCY = 1
    settings.CPRT_PROVIDER_BACKOFF_S = 0.05
    private_redis.kill()
    restart = threading.Timer(3.0, private_redis.start)
    restart.start()
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("launch_run", "--kind", "judge", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "zero_shot",
                     "--concurrency", "2", "--here", "--json", stdout=out, stderr=err)
    finally:
        restart.join()
    report = json.loads(out.getvalue())
    assert (report["status"], report["results"], report["errors"]) == ("finished", 5, 0)
    assert "nothing could be done for" in err.getvalue() and "ConnectionError" in err.getvalue() and "trying again in" in err.getvalue()
    assert sorted(RunResult.objects.filter(run_id=report["id"]).values_list("image_id", flat=True)) == sorted(i.pk for i in images)
    assert openai_server.count == 5  # nothing was asked while the limiter was down, nothing twice
    assert [m for m in broker.sent if m[0].startswith("inference.")] == []
