"""A real Celery worker is SIGKILLed mid-run; a resume with a new worker completes the run exactly once,
and the run counts the items whose requests were in flight when the worker died (possibly paid twice)."""
from __future__ import annotations

import os
import signal

import pytest

from inference import launching, prompts, runs
from inference.models import Run, RunResult
from inference.selection import Selection
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.workers import celery_worker, purge_broker, wait_for


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_killed_worker_loses_nothing_and_resume_finishes_exactly_once(make_image, admin_user, monkeypatch, settings):
    images = [make_image(f"2017_{i:08d}", color=(i, 3 * i % 256, 7 * i % 256)) for i in range(60)]
    with FakeOpenAIServer(delay=0.2, record=False) as server:
        env = {
            "OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_MAX_RPM": "0",
            "CPRT_RUN_CHUNK_SIZE": "10", "CPRT_RUN_HEARTBEAT_S": "0.3",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = FAKE_KEY, server.url + "/v1"
        settings.CPRT_RUN_CHUNK_SIZE = 10
        purge_broker()
        spec = launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, prompts.DEFAULT_VERSION["judge"], Selection(), 2)
        run = launching.launch_run(admin_user, spec)  # dispatched on commit, on the api queue
        results = RunResult.objects.filter(run=run)

        with celery_worker(queues="api", concurrency=2) as first:
            # Killed with a request in flight (under load both lanes were once between requests: nothing
            # was paid twice and the test could not see the run count it).
            wait_for(lambda: results.count() >= 12 and server.stats()["in_flight"] > 0, timeout=90,
                     what="the first worker to write some results with a request in flight")
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
        written_before_resume = results.count()
        assert written_before_resume < len(images), "the kill must happen mid-run"

        missing = runs.resume_run(admin_user, run)
        assert missing == len(images) - results.count()
        with celery_worker(queues="api", concurrency=2):
            wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.STATUS_FINISHED, timeout=120, what="the resumed run to finish")

    run.refresh_from_db()
    image_ids = list(results.values_list("image_id", flat=True))
    assert len(image_ids) == len(images) == len(set(image_ids))
    assert sorted(image_ids) == sorted(i.pk for i in images)
    assert run.outcome_counts == {"ok": len(images)}
    assert run.status == Run.STATUS_FINISHED
    # Requests the fake answered beyond one per image were paid twice; the run says so (it may also
    # count an item reserved in the instant before its request went out, never fewer).
    paid_twice = server.count - len(images)
    assert 0 < paid_twice <= run.items_resent <= paid_twice + 2
    assert run.resent_cost_usd is not None and run.resent_cost_usd > 0
