"""What a model's reply means, for every kind: refused, unparseable, or a validated answer.

Each kind's `apply()` (`inference.kinds`) turns replies into an `Outcome` with these; online execution
(`execution.process_image`) and batch ingest (`inference.batch.ingest`) both go through the kind, so
that a batch run stores exactly what the same run online would have stored.
"""
from __future__ import annotations

from .models import RunResult
from .schemas import ValidationError, describe_error


def classify(reply, model, context=None) -> tuple[str, object, str]:
    """(outcome, validated answer or None, error text) for one reply."""
    if reply.refusal:
        return RunResult.OUTCOME_REFUSED, None, f"refused: {reply.refusal}"
    if reply.parsed is None:
        return RunResult.OUTCOME_UNPARSEABLE, None, reply.parse_error or "no JSON in the response"
    try:
        return RunResult.OUTCOME_OK, model.model_validate(reply.parsed, context=context), ""
    except ValidationError as exc:
        return RunResult.OUTCOME_UNPARSEABLE, None, describe_error(exc)


def reply_record(reply) -> dict:
    return {"response": reply.raw, "text": reply.text, "refusal": reply.refusal, "finish_reason": reply.finish_reason}


# --- what a failure means for the run ------------------------------------------------------------
# A run pauses itself (the "fail" move, with `Run.stop_reason` one of these keys) when every further
# request would fail the same way; Resume after the fix continues with the items that have no result.
# docs/background-jobs.md, "What a provider's answer means", lists which failure is which.
PAUSE_REASONS = {
    "auth": "the provider refused the credentials (HTTP 401/403): check the API key",
    "no_model": "the provider has no such model (HTTP 404): check the model name and base URL",
    "not_api": "the provider's answer is not its API's JSON (a proxy's page? a base URL that is not the API?)",
    "provider_failing": "the provider kept failing (5xx, 429, timeouts or dropped connections) for every item tried",
    "items_failing": "every item failed in a row with the same kind of error (e.g. a 400 that every request repeats)",
    "model_file": "the local classifier's file is missing or changed since it was registered",
    "unavailable": "the provider is not configured in the worker (missing key or base URL)",
}


def pause_label(reason: str) -> str:
    return PAUSE_REASONS.get(reason, reason)
