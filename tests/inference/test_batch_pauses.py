"""Batch runs that fail for good pause themselves with a named reason, as online runs do
(inference.batch.pauses, docs/background-jobs.md "What a provider's answer means"): a submission
answered 401 or 404 or with a proxy's HTML page, output lines failing 401/404, a batch the provider
failed, every request failing; partial failures and expiries stay retryable. Driven through the batch
path (submit, poll, ingest) against the fake OpenAI and Gemini servers, through the real SDKs."""
from __future__ import annotations

import pytest
from django.urls import reverse

from inference import launching, prompts, runs
from inference.batch import lifecycle
from inference.batch.models import BatchRequest, ProviderBatch
from inference.models import Run, RunResult
from inference.outcomes import PAUSE_REASONS
from inference.selection import Selection
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.server import Reply
from tests.support.batch_steps import drive, no_dispatch  # noqa: F401 - no_dispatch is a fixture

HTML = Reply(body="<html><body><h1>502 Bad Gateway</h1>nginx</body></html>", headers={"Content-Type": "text/html"})
GEMINI_401 = Reply(status=401, body={"error": {"code": 401, "message": "API key not valid.", "status": "UNAUTHENTICATED"}})
MODELS = {"openai": "gpt-5.1", "gemini": "gemini-2.5-flash"}


def launch(user, provider="openai") -> Run:
    spec = launching.LaunchSpec(task="judge", provider=provider, model_name=MODELS[provider], strategy="zero_shot",
                                counterfactual_faces=False, prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(),
                                concurrency=4, mode="batch")
    return launching.launch_run(user, spec)


def paused(run: Run, reason: str) -> Run:
    run.refresh_from_db()
    assert (run.status, run.stop_reason) == (Run.STATUS_FAILED, reason), (run.status, run.stop_reason, run.error)
    assert run.error.startswith("Paused: " + PAUSE_REASONS[reason]) and "Resume" in run.error
    assert not ProviderBatch.objects.filter(run=run, phase__in=lifecycle.OPEN_PHASES).exists()  # nothing left open at the provider
    return run


def model_calls(server) -> int:
    return sum(1 for _, path in server.batch_calls if path.startswith(("/v1/files", "/v1/batches")))


@pytest.mark.parametrize("answer, reason", [(ofake.error(401, "Incorrect API key provided."), "auth"),
                                            (ofake.error(403, "forbidden"), "auth"),
                                            (ofake.error(404, "The model does not exist."), "no_model"),
                                            (HTML, "not_api")])
def test_a_submission_answered_for_good_pauses_the_run_at_once(openai_server, images, admin_user, no_dispatch, answer, reason):
    openai_server.batch_answer = answer
    run = launch(admin_user)
    lifecycle.step(run.pk)
    run = paused(run, reason)
    assert model_calls(openai_server) == 1  # the file upload, once; the run is no longer stepped
    assert lifecycle.poll_all() == {} and model_calls(openai_server) == 1
    assert set(BatchRequest.objects.filter(run=run).values_list("state", flat=True)) == {BatchRequest.FAILED}
    assert not RunResult.objects.filter(run=run).exists()


def test_every_part_of_a_split_submission_stops_at_the_first_refusal(openai_server, images, admin_user, no_dispatch, settings):
    settings.CPRT_BATCH_MAX_REQUESTS = 2  # three files
    openai_server.batch_answer = ofake.error(401, "Incorrect API key provided.")
    run = launch(admin_user)
    lifecycle.step(run.pk)
    paused(run, "auth")
    assert model_calls(openai_server) == 1 and ProviderBatch.objects.filter(run=run).count() == 3


def test_gemini_a_submission_answered_401_pauses_the_run(gemini_server, images, admin_user, no_dispatch):
    gemini_server.batch_answer = GEMINI_401
    run = launch(admin_user, "gemini")
    lifecycle.step(run.pk)
    paused(run, "auth")


@pytest.mark.parametrize("status, reason", [("401", "auth"), ("404", "no_model")])
def test_output_lines_failing_401_or_404_pause_the_run(openai_server, images, admin_user, no_dispatch, status, reason):
    run = launch(admin_user)
    openai_server.batch_outcome = status
    openai_server.batch_outcomes = {f"run{run.pk}-item{run.image_ids[0]}-judge": "ok"}  # even beside an answer
    run = paused(drive(run), reason)
    assert RunResult.objects.filter(run=run).count() == 1


@pytest.mark.parametrize("outcome, reason", [("fail", "provider_failing"), ("400", "items_failing")])
def test_a_batch_whose_every_request_failed_pauses_the_run(openai_server, images, admin_user, no_dispatch, outcome, reason):
    openai_server.batch_outcome = outcome  # a 500 or a 400 for every request
    run = paused(drive(launch(admin_user)), reason)
    assert "5 of the batch's 5 requests failed" in run.error and not RunResult.objects.filter(run=run).exists()


def test_failures_count_across_batches_until_an_answer(openai_server, images, admin_user, no_dispatch, settings):
    """Parts of 3 and 2 requests: failures with no answer between add up on the run's streak
    (Run.failures_in_a_row) across batches; an answer in between ends it; expiries never count."""
    settings.CPRT_BATCH_MAX_REQUESTS = 3
    settings.CPRT_RUN_PAUSE_AFTER_FAILURES = 3

    def script(run, outcomes):
        openai_server.batch_outcomes = {f"run{run.pk}-item{i}-judge": o for i, o in zip(run.image_ids, outcomes)}
        return drive(run)

    answered = script(launch(admin_user), ["fail", "fail", "expire", "ok", "fail"])
    assert answered.status == Run.STATUS_RUNNING and answered.stop_reason == "" and "4 batch requests failed or expired" in answered.error
    run = paused(script(launch(admin_user), ["fail", "fail", "expire", "fail", "expire"]), "provider_failing")
    assert "1 of the batch's 2 requests failed" in run.error


def test_a_batch_the_provider_failed_pauses_the_run_naming_the_model(openai_server, images, admin_user, no_dispatch):
    openai_server.fail_batches = "The model `gpt-5.1-typo` does not exist or you do not have access to it."
    run = paused(drive(launch(admin_user)), "no_model")
    assert "does not exist" in run.error


def test_an_output_file_that_is_not_batch_lines_pauses_the_run(openai_server, images, admin_user, no_dispatch):
    openai_server.mangle_output = lambda data: b"<html><body>502 Bad Gateway</body></html>\n"
    run = paused(drive(launch(admin_user)), "not_api")
    assert "none of the 1 lines" in run.error


def test_expired_requests_stay_retryable_and_never_pause(openai_server, images, admin_user, no_dispatch):
    openai_server.batch_outcome = "expire"
    run = drive(launch(admin_user))
    assert run.status == Run.STATUS_RUNNING and run.stop_reason == "" and "5 batch requests failed or expired" in run.error


def test_the_pause_is_on_the_page_and_in_the_api(openai_server, images, admin_user, no_dispatch, client_as):
    openai_server.batch_answer = ofake.error(401, "Incorrect API key provided.")
    run = launch(admin_user)
    lifecycle.step(run.pk)
    paused(run, "auth")
    client = client_as(admin_user)
    assert PAUSE_REASONS["auth"] in client.get(reverse("inference:run_detail", args=[run.pk])).content.decode()
    body = client.get(f"/api/runs/{run.pk}/").json()
    assert body["stop_reason"] == "auth" and body["status"] == Run.STATUS_FAILED


def test_resume_after_the_fix_sends_the_failed_requests_again_in_batch(openai_server, images, admin_user, no_dispatch,
                                                                        django_capture_on_commit_callbacks, eager_celery):
    openai_server.batch_answer = ofake.error(401, "Incorrect API key provided.")
    run = launch(admin_user)
    lifecycle.step(run.pk)
    run = paused(run, "auth")
    assert runs.can_resume(run)
    openai_server.batch_answer = None  # the key is fixed
    with django_capture_on_commit_callbacks(execute=True):
        assert runs.resume_run(admin_user, run) == 5
    run = drive(run)
    assert run.status == Run.STATUS_FINISHED and run.stop_reason == "" and run.outcome_counts == {"ok": 5}, run.error
    assert ProviderBatch.objects.filter(run=run, round=1, phase=ProviderBatch.ENDED).count() == 1
    assert not [p for _, p in openai_server.batch_calls if p.endswith("/chat/completions")]  # in batch, never online
