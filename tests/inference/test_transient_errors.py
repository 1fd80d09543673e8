"""Transient is not final: an error that can pass (Redis, the database, the broker, a provider still
answering 5xx/429/timeouts after every attempt) stores no result; the image is tried again later.
Only answers that will not change (refusal, invalid answer, a 4xx other than 429) are final."""
from __future__ import annotations

import threading
import time

import pytest
import redis.exceptions
from django.db import OperationalError, connection
from prometheus_client import REGISTRY

from inference import dispatching, execution, item_calls, launching, prompts, ratelimit, runs
from inference.items import missing_item_ids
from inference.models import Run, RunResult
from inference.selection import Selection
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403


def launch_spec(concurrency=2) -> launching.LaunchSpec:
    return launching.LaunchSpec(
        task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", counterfactual_faces=False,
        prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(), concurrency=concurrency,
    )


def launch(django_capture_on_commit_callbacks, concurrency=2) -> Run:
    with django_capture_on_commit_callbacks(execute=False):  # no broker: the test runs the chunks itself
        return launching.launch_run(None, launch_spec(concurrency))


class FlakySchedule:
    """The rate limiter's schedule with Redis down for the first `down` reservations (or while `is_down`)."""

    def __init__(self, real, down: int = 0):
        self.real, self.down, self.calls, self.is_down = real, down, 0, False
        self.lock = threading.Lock()

    def reserve(self, key, interval, burst):
        with self.lock:
            self.calls += 1
            failing = self.is_down or self.calls <= self.down
        if failing:
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return self.real.reserve(key, interval, burst)

    def hold(self, key, seconds, interval, burst):
        return self.real.hold(key, seconds, interval, burst)


@pytest.fixture
def flaky_limiter(settings, monkeypatch):
    settings.OPENAI_MAX_RPM = 600_000  # enabled, never the bottleneck
    schedule = FlakySchedule(ratelimit.schedule())
    monkeypatch.setattr(ratelimit, "schedule", lambda: schedule)
    return schedule


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_redis_down_at_the_rate_limiter_stores_no_error_and_every_image_ends_ok_once(
        openai_server, images, flaky_limiter, django_capture_on_commit_callbacks):
    flaky_limiter.down = 7
    run = launch(django_capture_on_commit_callbacks)
    stats = execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert not RunResult.objects.filter(run=run, outcome=RunResult.OUTCOME_ERROR).exists()
    assert sorted(RunResult.objects.filter(run=run, outcome="ok").values_list("image_id", flat=True)) == run.image_ids
    assert openai_server.count == len(images)  # each image asked once: the failures happened before sending
    assert stats["written"] == 5 and stats["deferred"] == 7 and "ConnectionError" in stats["last_transient_error"]
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 5}


def test_a_database_error_during_the_call_is_not_final(openai_server, images, monkeypatch, django_capture_on_commit_callbacks):
    calls = {"n": 0}
    real = item_calls._call

    def flaky(ctx, request, attempts):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise OperationalError("server closed the connection unexpectedly")
        return real(ctx, request, attempts)

    monkeypatch.setattr(item_calls, "_call", flaky)
    run = launch(django_capture_on_commit_callbacks)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.outcome_counts == {"ok": 5} and run.status == Run.STATUS_FINISHED


def test_an_unreadable_image_file_stays_final(openai_server, images, django_capture_on_commit_callbacks):
    run = launch(django_capture_on_commit_callbacks)
    images[0].file.storage.delete(images[0].file.name)
    execution.run_chunk(run.pk, run.image_ids)
    result = RunResult.objects.get(run=run, image=images[0])
    assert result.outcome == "error" and "image file unreadable" in result.error


def test_503_past_max_attempts_is_left_for_a_later_chunk(openai_server, images, settings, django_capture_on_commit_callbacks):
    settings.CPRT_PROVIDER_MAX_ATTEMPTS = 2
    settings.CPRT_RUN_CHUNK_TARGET_S = 0.3  # the chunk stops retrying after 2 x this
    settings.CPRT_RUN_PAUSE_AFTER_FAILURES = 10_000  # not long enough to pause the run (tests/inference/test_run_pauses.py)
    down = threading.Event()
    down.set()

    def busy(path, payload):
        return ofake.error(503, "overloaded") if down.is_set() else openai_server.default_reply(path, payload)

    openai_server.queue(*[busy] * 10_000)
    run = launch(django_capture_on_commit_callbacks, concurrency=1)
    first = run.image_ids[0]
    before = sample("cprt_provider_errors_total", provider="openai", kind="server")
    stats = execution.run_chunk(run.pk, [first])
    assert RunResult.objects.filter(run=run).count() == 0  # nothing final was written
    assert stats["left_missing"] == 1 and stats["written"] == 0
    assert "gave up after 2 attempts" in stats["last_transient_error"]
    assert sample("cprt_provider_errors_total", provider="openai", kind="server") - before == openai_server.count
    # It backed off rather than spinning: far fewer requests than 0.6 s of back-to-back calls.
    assert 2 <= openai_server.count <= 30
    run.refresh_from_db()
    assert run.status == Run.STATUS_RUNNING and first in missing_item_ids(run)
    down.clear()  # the provider is back: the next chunk (a hand-on, a resume, the reconciler) gets it
    execution.run_chunk(run.pk, [first])
    assert RunResult.objects.get(run=run, image_id=first).outcome == "ok"


def test_a_resume_after_an_outage_finishes_the_run(
        openai_server, images, settings, flaky_limiter, django_capture_on_commit_callbacks, eager_celery, admin_user):
    settings.CPRT_RUN_CHUNK_TARGET_S = 0.2
    flaky_limiter.is_down = True
    run = launch(django_capture_on_commit_callbacks)
    execution.run_chunk(run.pk, run.image_ids)
    assert RunResult.objects.filter(run=run).count() == 0 and openai_server.count == 0
    flaky_limiter.is_down = False
    with django_capture_on_commit_callbacks(execute=True):
        assert runs.resume_run(admin_user, Run.objects.get(pk=run.pk)) == 5
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 5}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_chunk_waiting_for_redis_stops_at_once_on_cancel(openai_server, images, settings, flaky_limiter, admin_user, monkeypatch):
    settings.CPRT_RUN_CHUNK_TARGET_S = 60.0
    settings.CPRT_PROVIDER_BACKOFF_S = settings.CPRT_PROVIDER_BACKOFF_MAX_S = 2.0  # long pauses: the cancel must not wait for them
    flaky_limiter.is_down = True
    monkeypatch.setattr(dispatching, "dispatch", lambda *args, **kwargs: 0)  # this test runs the chunk itself
    run = launching.launch_run(None, launch_spec())
    out = {}

    def chunk():
        try:
            out["stats"] = execution.run_chunk(run.pk, run.image_ids)
        finally:
            connection.close()

    thread = threading.Thread(target=chunk)
    thread.start()
    time.sleep(1.0)
    runs.cancel_run(admin_user, Run.objects.get(pk=run.pk))
    started = time.monotonic()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - started < 3.0
    assert out["stats"]["stopped"] and out["stats"]["written"] == 0
    assert flaky_limiter.calls <= 6  # paused between tries, not spinning
    assert RunResult.objects.filter(run=run).count() == 0
    assert Run.objects.get(pk=run.pk).status == Run.STATUS_CANCELLED


def test_a_400_stays_a_final_error_and_is_counted(openai_server, images, django_capture_on_commit_callbacks):
    before = sample("cprt_provider_calls_total", provider="openai", outcome="error")
    ok_before = sample("cprt_provider_calls_total", provider="openai", outcome="ok")
    openai_server.queue(ofake.error(400, "image too large"))
    run = launch(django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.outcome_counts == {"error": 1, "ok": 4} and openai_server.count == 5
    assert sample("cprt_provider_calls_total", provider="openai", outcome="error") - before == 1
    assert sample("cprt_provider_calls_total", provider="openai", outcome="ok") - ok_before == 4


def test_retries_are_counted(openai_server, images, django_capture_on_commit_callbacks):
    before = sample("cprt_provider_retries_total", provider="openai")
    limited = sample("cprt_provider_errors_total", provider="openai", kind="rate_limit")
    openai_server.queue(ofake.error(429, "slow down"), ofake.error(500, "boom"))
    run = launch(django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    assert sample("cprt_provider_retries_total", provider="openai") - before == 2
    assert sample("cprt_provider_errors_total", provider="openai", kind="rate_limit") - limited == 1


def test_a_write_that_fails_on_a_database_error_is_written_later_once(
        openai_server, images, monkeypatch, django_capture_on_commit_callbacks):
    real = execution.write_outcomes
    failures = {"left": 2}

    def flaky(run, outcomes, kind):
        if failures["left"]:
            failures["left"] -= 1
            raise OperationalError("could not connect to server: Connection refused")
        return real(run, outcomes, kind)

    monkeypatch.setattr(execution, "write_outcomes", flaky)
    run = launch(django_capture_on_commit_callbacks)
    stats = execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert stats["database_errors"] == 2 and stats["written"] == 5
    assert run.outcome_counts == {"ok": 5} and openai_server.count == 5
