"""A Gemini batch output line that carries a status object (google.rpc.Status) instead of a response
is a failed request, retryable like any other failure, not a refused line (fake Gemini server, real SDK)."""
from __future__ import annotations

from inference import launching, prompts
from inference.batch import control
from inference.batch.models import BatchRequest
from inference.models import Run
from inference.selection import Selection
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.batch_steps import drive, no_dispatch  # noqa: F401 - no_dispatch is a fixture


def test_a_status_object_line_is_a_retryable_failure(gemini_server, images, admin_user, no_dispatch, settings, eager_celery,
                                                     django_capture_on_commit_callbacks):
    settings.CPRT_BATCH_GEMINI_INLINE_MAX_BYTES = 0  # an uploaded file, whose output lines are JSON objects
    run = launching.launch_run(admin_user, launching.LaunchSpec(
        task="judge", provider="gemini", model_name="gemini-2.5-flash", strategy="zero_shot", counterfactual_faces=False,
        prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(), concurrency=4, mode="batch"))
    first = run.image_ids[0]
    gemini_server.batch_outcomes = {f"run{run.pk}-item{first}-judge": "status"}
    run = drive(run)

    assert set(run.results.values_list("image_id", flat=True)) == set(run.image_ids[1:])
    request = BatchRequest.objects.get(run=run, image_id=first)
    assert request.state == BatchRequest.FAILED and "Resource has been exhausted" in request.error
    assert "1 batch requests failed" in run.error and "refused" not in run.error
    assert control.can_retry(run)

    gemini_server.batch_outcomes = {}
    with django_capture_on_commit_callbacks(execute=True):
        assert control.retry(admin_user, run, "batch") == 1
    run = drive(run)
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": len(run.image_ids)}, run.error
