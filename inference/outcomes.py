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
