"""What a provider's answer means for the run (docs/background-jobs.md): transient failures are
retried with a pause that doubles once per round; answers every request would get (401/403, 404, a
2xx that is not the API's JSON) and providers failing every item pause the run with a named reason,
shown on its page, in the API, in /metrics and in one log line; Resume after the fix continues
where it stopped. Each provider is tested against its fake server (tests/fakes/)."""
from __future__ import annotations

import io
import json
import logging
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from core import metrics
from inference import execution, launching, prompts, ratelimit, runs
from inference.models import Run, RunResult
from inference.outcomes import PAUSE_REASONS
from inference.selection import Selection
from tests.fakes import gemini_server as gfake
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.server import Reply

HTML = Reply(body="<html><body><h1>502 Bad Gateway</h1>nginx</body></html>", headers={"Content-Type": "text/html"})
PROVIDERS = {  # provider -> (fixture, model, fake module)
    "openai": ("openai_server", "gpt-5.1", ofake),
    "vllm": ("vllm_server", "Qwen/Qwen2.5-VL-7B-Instruct", ofake),
    "gemini": ("gemini_server", "gemini-2.5-flash", gfake),
}


@pytest.fixture
def six_images(make_image):
    return [make_image(f"2017_{i:08d}", color=(20 * i, 250 - 20 * i, 9 * i)) for i in range(1, 7)]


@pytest.fixture
def provider(request, settings):
    """(provider name, its fake server) for the parametrized provider."""
    fixture, _, _ = PROVIDERS[request.param]
    return request.param, request.getfixturevalue(fixture)


def launch(provider: str, django_capture_on_commit_callbacks, concurrency: int = 4) -> Run:
    spec = launching.LaunchSpec("judge", provider, PROVIDERS[provider][1], "zero_shot", False, prompts.DEFAULT_VERSION["judge"],
                                Selection(), concurrency)
    with django_capture_on_commit_callbacks(execute=False):  # no broker: the test works the chunk itself
        return launching.launch_run(None, spec)


def forever(server, reply) -> None:
    server.queue(*[reply] * 10_000)


def paused(run: Run, reason: str) -> Run:
    run.refresh_from_db()
    assert run.status == Run.STATUS_FAILED and run.stop_reason == reason
    assert run.error.startswith("Paused: " + PAUSE_REASONS[reason]) and "Resume" in run.error
    return run


# --- final for the run: answers every request would get --------------------------------------

@pytest.mark.parametrize("provider", ["openai", "vllm", "gemini"], indirect=True)
def test_a_200_that_is_an_html_page_pauses_the_run_at_once(provider, six_images, django_capture_on_commit_callbacks):
    name, server = provider
    forever(server, HTML)
    run = launch(name, django_capture_on_commit_callbacks)
    stats = execution.run_chunk(run.pk, run.image_ids)
    run = paused(run, "not_api")
    assert server.count <= run.concurrency  # only the requests already in flight
    assert stats["pause"][0] == "not_api" and not RunResult.objects.filter(run=run).exists()


@pytest.mark.parametrize("provider", ["openai", "gemini"], indirect=True)
def test_a_200_with_json_that_is_not_the_api_pauses_the_run(provider, six_images, django_capture_on_commit_callbacks):
    name, server = provider
    forever(server, Reply(body={"status": "ok", "message": "welcome to the gateway"}))
    run = launch(name, django_capture_on_commit_callbacks)
    execution.run_chunk(run.pk, run.image_ids)
    paused(run, "not_api")
    assert server.count <= run.concurrency


@pytest.mark.parametrize("provider", ["openai", "vllm", "gemini"], indirect=True)
@pytest.mark.parametrize("status, reason", [(401, "auth"), (403, "auth"), (404, "no_model")])
def test_401_403_and_404_pause_the_run_with_their_reason_within_a_few_calls(
        provider, status, reason, six_images, django_capture_on_commit_callbacks):
    name, server = provider
    forever(server, PROVIDERS[name][2].error(status, "no"))
    run = launch(name, django_capture_on_commit_callbacks)
    execution.run_chunk(run.pk, run.image_ids)
    run = paused(run, reason)
    assert f"HTTP {status}" in run.error and server.count <= 12
    assert not RunResult.objects.filter(run=run).exists()


# --- final for the run: a provider failing every item ------------------------------------------

@pytest.mark.parametrize("provider", ["openai", "vllm", "gemini"], indirect=True)
def test_a_provider_answering_500_for_good_pauses_the_run_within_60_calls(provider, six_images, settings, django_capture_on_commit_callbacks):
    settings.CPRT_RUN_CHUNK_TARGET_S = 60.0  # the chunk would try for minutes: the pause must end it
    name, server = provider
    forever(server, PROVIDERS[name][2].error(500, "internal error"))
    run = launch(name, django_capture_on_commit_callbacks)
    execution.run_chunk(run.pk, run.image_ids)
    run = paused(run, "provider_failing")
    assert "HTTP 500" in run.error and server.count <= 60
    assert server.count >= settings.CPRT_PROVIDER_MAX_ATTEMPTS  # every item was given its attempts first
    assert not RunResult.objects.filter(run=run).exists()  # transient: nothing final written


def test_a_provider_failing_for_m_minutes_pauses_the_run_even_below_n_failures(openai_server, six_images, settings,
                                                                                django_capture_on_commit_callbacks):
    settings.CPRT_RUN_CHUNK_TARGET_S = 60.0
    settings.CPRT_RUN_PAUSE_AFTER_FAILURES = 1000
    forever(openai_server, ofake.error(503, "overloaded"))
    run = launch("openai", django_capture_on_commit_callbacks)
    Run.objects.filter(pk=run.pk).update(failures_in_a_row=1, failing_since=timezone.now() - timedelta(seconds=settings.CPRT_RUN_PAUSE_AFTER_S + 1))
    execution.run_chunk(run.pk, run.image_ids)
    paused(run, "provider_failing")
    assert openai_server.count <= run.concurrency * settings.CPRT_PROVIDER_MAX_ATTEMPTS  # the first round's failures


def test_the_streak_is_shared_by_chunks_and_an_answer_ends_it(openai_server, six_images, settings, django_capture_on_commit_callbacks):
    settings.CPRT_PROVIDER_MAX_ATTEMPTS = 1
    settings.CPRT_RUN_CHUNK_TARGET_S = 0.05  # each chunk tries its item once or twice, then hands it on
    forever(openai_server, ofake.error(500, "boom"))
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=1)
    for _ in range(20):
        execution.run_chunk(run.pk, run.image_ids[:1])
        run.refresh_from_db()
        if run.status != Run.STATUS_RUNNING:
            break
    assert run.status == Run.STATUS_FAILED and run.stop_reason == "provider_failing"  # counted across chunks
    Run.objects.filter(pk=run.pk).update(status=Run.STATUS_RUNNING, stop_reason="", failures_in_a_row=3,
                                         failing_since=timezone.now())
    openai_server.script.clear()  # the provider answers again
    execution.run_chunk(run.pk, run.image_ids[1:2])
    run.refresh_from_db()
    assert (run.failures_in_a_row, run.failing_since) == (0, None)


def test_a_400_every_item_repeats_pauses_the_run_and_writes_none_of_them(openai_server, six_images, settings,
                                                                        django_capture_on_commit_callbacks):
    forever(openai_server, ofake.error(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported"))
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    run = paused(run, "items_failing")
    assert openai_server.count == settings.CPRT_RUN_PAUSE_AFTER_FAILURES  # one call per item, no retry of a 400
    assert not RunResult.objects.filter(run=run).exists()  # Resume after the fix asks them again


def test_a_400_about_the_item_itself_stays_that_items_error_and_the_run_goes_on(openai_server, six_images,
                                                                               django_capture_on_commit_callbacks):
    too_long = Reply(status=400, body={"error": {"message": "This model's maximum context length is 128000 tokens.",
                                                 "type": "invalid_request_error", "code": "context_length_exceeded"}})
    forever(openai_server, too_long)
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.stop_reason == "" and run.outcome_counts == {"error": 6}


def test_a_few_rejected_items_between_answers_are_written_as_their_errors(openai_server, six_images,
                                                                         django_capture_on_commit_callbacks):
    openai_server.queue(ofake.error(400, "bad"), ofake.error(400, "bad"))  # two in a row, then answers
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"error": 2, "ok": 4}


def test_refusals_and_unparseable_answers_never_pause_a_run(openai_server, six_images, django_capture_on_commit_callbacks):
    openai_server.queue(*[ofake.refusal()] * 3, *[ofake.ok("not json at all")] * 3)
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"refused": 3, "unparseable": 3}


def test_onnx_a_missing_classifier_file_pauses_the_run(settings, tmp_path, make_image, django_capture_on_commit_callbacks):
    from tests.inference.test_classifiers import register, tiny_classifier
    from inference.providers.onnx.models import ClassifierModel
    from inference.providers.onnx import provider as onnx_provider

    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    register("tiny-s2p", tiny_classifier(tmp_path / "tiny.onnx"), "--classes", "private,public")
    make_image("2017_26000001")
    model = ClassifierModel.objects.get(name="tiny-s2p")
    onnx_provider._verified.clear()
    model.path.unlink()
    spec = launching.LaunchSpec("binary", "onnx", "tiny-s2p", "", False, "binary-v1", Selection(), 2)
    run = launching.launch_run(None, spec, send=False)
    execution.run_chunk(run.pk, run.image_ids)
    paused(run, "model_file")


# --- shown everywhere, and Resume after the fix -------------------------------------------------

def test_the_pause_is_on_the_page_in_the_api_in_metrics_and_in_one_log_line(
        openai_server, six_images, django_capture_on_commit_callbacks, admin_user, client_as, caplog, settings):
    forever(openai_server, HTML)
    run = launch("openai", django_capture_on_commit_callbacks)
    before = metrics.RUN_PAUSES.labels(reason="not_api")._value.get()
    with caplog.at_level(logging.WARNING):
        execution.run_chunk(run.pk, run.image_ids)
    lines = [r for r in caplog.records if "paused" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING and "(not_api)" in lines[0].getMessage()
    client = client_as(admin_user)
    page = client.get(reverse("inference:run_detail", args=[run.pk])).content.decode()
    assert PAUSE_REASONS["not_api"] in page.replace("&#x27;", "'")
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert api["status"] == "failed" and api["stop_reason"] == "not_api" and "Paused" in api["error"]
    assert metrics.RUN_PAUSES.labels(reason="not_api")._value.get() - before == 1
    settings.CPRT_METRICS_TOKEN = "metrics-token-for-the-test"
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token-for-the-test").content.decode()
    assert 'cprt_jobs_paused{kind="run",reason="not_api"} 1.0' in text


def test_resume_after_the_fix_continues_where_it_stopped(openai_server, six_images, settings, admin_user,
                                                         django_capture_on_commit_callbacks, eager_celery):
    settings.CPRT_RUN_CHUNK_TARGET_S = 60.0
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids[:2])  # two answers first
    forever(openai_server, ofake.error(500, "down"))
    execution.run_chunk(run.pk, run.image_ids)
    run = paused(run, "provider_failing")
    assert run.outcome_counts == {"ok": 2} and run.failures_in_a_row >= settings.CPRT_RUN_PAUSE_AFTER_FAILURES
    openai_server.script.clear()  # fixed
    calls = openai_server.count
    with django_capture_on_commit_callbacks(execute=True):
        assert runs.resume_run(admin_user, Run.objects.get(pk=run.pk)) == 4
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 6}
    assert (run.stop_reason, run.failures_in_a_row, run.failing_since) == ("", 0, None)
    assert openai_server.count - calls == 4  # only the four still missing were asked


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # --here works the lanes on threads of their own
@pytest.mark.parametrize("reply, reason", [(HTML, "not_api"), (ofake.error(500, "boom"), "provider_failing"),
                                           (ofake.error(401, "bad key"), "auth"), (ofake.error(404, "no such model"), "no_model")])
def test_launch_run_here_returns_with_the_run_paused_and_its_reason(openai_server, six_images, reply, reason, monkeypatch):
    from cprt_site.celery import app

    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)  # a finished judge run's metrics refresh: no broker here
    forever(openai_server, reply)
    out = io.StringIO()
    with pytest.raises(Exception, match="ended failed"):
        call_command("launch_run", "--kind", "judge", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "zero_shot",
                     "--sample", "6", "--seed", "1", "--here", "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert report["status"] == "failed" and report["stop_reason"] == reason and "Paused" in report["error"]
    assert openai_server.count <= (12 if reason in ("auth", "no_model", "not_api") else 60)


# --- transient: one pause per round, capped ------------------------------------------------------

class DownSchedule:
    """The rate limiter's schedule with Redis down for the first `down` reservations."""

    def __init__(self, real, down: int):
        import threading

        self.real, self.down, self.calls, self.lock = real, down, 0, threading.Lock()

    def reserve(self, key, interval, burst):
        import redis.exceptions

        with self.lock:
            self.calls += 1
            failing = self.calls <= self.down
        if failing:
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return self.real.reserve(key, interval, burst)

    def hold(self, *args):
        return self.real.hold(*args)


def test_the_pause_doubles_once_per_round_not_once_per_deferred_item(openai_server, six_images, settings, monkeypatch,
                                                                    django_capture_on_commit_callbacks):
    settings.OPENAI_MAX_RPM = 600_000  # the limiter is on (and never the bottleneck)
    schedule = DownSchedule(ratelimit.schedule(), down=6)  # the whole first round of six fails
    monkeypatch.setattr(ratelimit, "schedule", lambda: schedule)
    rounds = []
    real = execution._transient_pause
    monkeypatch.setattr(execution, "_transient_pause", lambda n: rounds.append(n) or real(n))
    run = launch("openai", django_capture_on_commit_callbacks, concurrency=6)
    stats = execution.run_chunk(run.pk, run.image_ids)
    assert stats["deferred"] == 6 and rounds == [1]  # six deferred items, one round: one pause (the old counter reached 6)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 6}
    assert run.failures_in_a_row == 0  # infrastructure errors never count towards a pause


def test_the_transient_pause_is_capped_at_8_seconds_whatever_the_provider_backoff_cap(settings):
    settings.CPRT_PROVIDER_BACKOFF_S, settings.CPRT_PROVIDER_BACKOFF_MAX_S = 1.0, 60.0
    assert max(execution._transient_pause(n) for n in range(1, 40) for _ in range(20)) <= execution.TRANSIENT_BACKOFF_MAX_S == 8.0
    assert 0.5 <= execution._transient_pause(1) <= 1.0  # jittered: 50 to 100 % of the doubled base
    from inference import inprocess

    assert max(inprocess._pause(n) for n in range(1, 40)) <= 8.0  # launch_run --here between chunks: the same cap
    settings.CPRT_PROVIDER_BACKOFF_MAX_S = 0.05
    assert execution._transient_pause(30) <= 0.05  # a smaller configured cap wins


def test_a_cancel_asked_before_the_pause_wins(openai_server, six_images, django_capture_on_commit_callbacks, admin_user):
    from inference.lifecycle import pause_run

    run = launch("openai", django_capture_on_commit_callbacks)
    Run.objects.filter(pk=run.pk).update(status=Run.STATUS_CANCELLING)
    assert not pause_run(run.pk, "auth", "HTTP 401")
    run.refresh_from_db()
    assert run.status == Run.STATUS_CANCELLED and run.stop_reason == ""


@pytest.mark.parametrize("provider", ["openai", "gemini"], indirect=True)
def test_a_proxys_html_502_is_transient_not_a_pause(provider, six_images, django_capture_on_commit_callbacks):
    name, server = provider
    server.queue(Reply(status=502, body="<html><body>502 Bad Gateway</body></html>", headers={"Content-Type": "text/html"}))
    run = launch(name, django_capture_on_commit_callbacks, concurrency=1)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 6} and server.count == 7
