"""A worker survives its Redis going away mid-run (the CI-sized `bench/run_faults.py --case redis`).

A private redis-server (never the shared one; no persistence, so it comes back EMPTY: the queued
messages are gone too) is the broker, the result backend and the rate limiter of a real worker
(`-Q default,api`, as compose runs it) and of beat. A judge run of 20 images is launched with
`manage.py launch_run`; once some results are stored, redis-server is SIGKILLed, stays down 3 s and
is started again. With celery/kombu 5.7.0 as they are, the worker stopped consuming ("Unrecoverable
error: AttributeError: 'NoneType' object has no attribute 'hostname'") and the run never finished
(cprt_site/broker_transport.py). Now: the same worker process reconnects, the lanes whose messages
were lost or never sent are sent again by the reconciler, and every image is answered exactly once
(counted at the fake provider), with no `error` result.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from inference.models import Run, RunResult
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.redis_server import REDIS_SERVER, PrivateRedis
from tests.support.workers import ROOT, celery_beat, celery_worker, wait_for, worker_env

pytestmark = pytest.mark.skipif(not os.path.exists(REDIS_SERVER), reason="redis-server is not installed")

IMAGES = 20
OUTAGE_S = 3.0


def launch(env: dict) -> dict:
    """`manage.py launch_run` against the private broker (a separate process: this one's Celery app
    is bound to the configured broker); the run is queued for the worker."""
    cmd = [sys.executable, "manage.py", "launch_run", "--kind", "judge", "--provider", "openai", "--model", "gpt-5.1",
           "--strategy", "zero_shot", "--concurrency", "2", "--json"]
    done = subprocess.run(cmd, cwd=ROOT, env={**worker_env(), **env}, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_worker_survives_redis_going_away_mid_run(make_image, tmp_path):
    images = [make_image(f"2017_{i:08d}", color=(11 * i % 256, 255 - 7 * i, 3 * i)) for i in range(IMAGES)]
    redis_server = PrivateRedis(tmp_path).start()
    log_path = tmp_path / "worker.log"
    try:
        with FakeOpenAIServer(delay=0.4, record=False) as provider:
            env = {
                "CELERY_BROKER_URL": redis_server.url, "CELERY_RESULT_BACKEND": redis_server.url, "CPRT_RATE_LIMIT_URL": redis_server.url,
                "OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": provider.url + "/v1", "OPENAI_MAX_RPM": "600",
                # two lanes of one request, chunks of ~5 images: lanes hand on (send) during the outage
                "CPRT_RUN_LANE_CONCURRENCY": "1", "CPRT_RUN_CHUNK_TARGET_S": "1", "CPRT_RUN_HEARTBEAT_S": "0.3",
                "CPRT_RUN_STALE_S": "6", "CPRT_RECONCILE_EVERY_S": "1", "CPRT_PROVIDER_BACKOFF_S": "0.2",
            }
            with celery_worker(queues="default,api", concurrency=3, log_path=log_path, env=env) as worker, celery_beat(tmp_path, env=env) as beat:
                report = launch(env)
                assert report["status"] in ("queued", "running") and report["total"] == IMAGES  # the worker may have started it
                results = RunResult.objects.filter(run_id=report["id"])
                wait_for(lambda: results.count() >= 6, timeout=180, what="some results before the outage")
                redis_server.kill()
                in_flight = provider.stats()["in_flight"]
                time.sleep(OUTAGE_S)
                redis_server.start()
                wait_for(lambda: Run.objects.get(pk=report["id"]).status not in Run.ACTIVE_STATUSES, timeout=180,
                         what="the run to finish after the outage")
                assert worker.poll() is None, "the worker exited"
                assert beat.poll() is None, "beat exited"
                log = log_path.read_text(errors="replace")
            stats = provider.stats()
    finally:
        redis_server.kill()

    assert "Connection to broker lost" in log, "the outage must have reached the worker"
    assert "Unrecoverable error" not in log and "'NoneType' object has no attribute 'hostname'" not in log
    run = Run.objects.get(pk=report["id"])
    image_ids = list(results.values_list("image_id", flat=True))
    assert run.status == Run.STATUS_FINISHED
    assert sorted(image_ids) == sorted(i.pk for i in images)  # one result per image, none twice
    assert run.outcome_counts == {"ok": IMAGES}  # no permanent error
    assert in_flight <= 2
    assert (stats["count"], stats["distinct"], stats["repeats"]) == (IMAGES, IMAGES, 0), stats  # every image asked exactly once
