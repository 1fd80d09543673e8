"""Permission cases for the model-run pages: admins only (reviewers must not see model outputs)."""
from . import ADMIN_ONLY, Case, matrix
from tests.conftest import with_submission_token

ADMIN_404 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_405 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)
# POSTs that redirect back to the run page when they succeed (or are refused with a message).
ADMIN_REDIRECT = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=302)


def setup(world):
    from inference.models import Run

    world["run"] = Run.objects.create(
        task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", prompt_version="judge-v1",
        status="finished", total_images=0,
    )


def cases(world):
    run = {"run_id": world["run"].pk}
    missing = {"run_id": 999999}
    bad_launch = with_submission_token({"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "split": "all", "concurrency": "4"})
    return [
        Case("inference:run_list", expect=ADMIN_ONLY),
        Case("inference:run_list", method="post", expect=ADMIN_405),
        Case("inference:run_list_rows", expect=ADMIN_ONLY),
        Case("inference:run_new", expect=ADMIN_ONLY),
        # Invalid (no strategy, no provider key): re-rendered with errors, nothing launched.
        Case("inference:run_new", method="post", data=bad_launch, expect=matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)),
        Case("inference:run_estimate", method="post", data=bad_launch, expect=ADMIN_ONLY),
        Case("inference:run_estimate", expect=ADMIN_405),
        Case("inference:prompts", expect=ADMIN_ONLY),
        Case("inference:run_detail", kwargs=run, expect=ADMIN_ONLY),
        Case("inference:run_detail", kwargs=missing, expect=ADMIN_404),
        Case("inference:run_progress", kwargs=run, expect=ADMIN_ONLY),
        Case("inference:run_progress", kwargs=missing, expect=ADMIN_404),
        Case("inference:run_cancel", kwargs=run, method="post", expect=ADMIN_REDIRECT),
        Case("inference:run_cancel", kwargs=run, expect=ADMIN_405),
        Case("inference:run_cancel", kwargs=missing, method="post", expect=ADMIN_404),
        Case("inference:run_resume", kwargs=run, method="post", expect=ADMIN_REDIRECT),
        Case("inference:run_resume", kwargs=run, expect=ADMIN_405),
        Case("inference:run_resume", kwargs=missing, method="post", expect=ADMIN_404),
        Case("inference:run_retry_failed", kwargs=run, method="post", expect=ADMIN_REDIRECT),
        Case("inference:run_retry_failed", kwargs=run, expect=ADMIN_405),
        Case("inference:run_retry_failed", kwargs=missing, method="post", expect=ADMIN_404),
        Case("inference:run_batch_retry", kwargs=run, method="post", data={"how": "online"}, expect=ADMIN_REDIRECT),
        Case("inference:run_batch_retry", kwargs=run, expect=ADMIN_405),
        Case("inference:run_batch_retry", kwargs=missing, method="post", expect=ADMIN_404),
    ]
