"""What a model's replies mean for one image: the ONE place where replies become outcomes.

Online execution (`execution.process_image`) and batch ingest (`inference.batch.ingest`) both call
these, so that a batch run stores exactly what the same run online would have stored.
Each function fills an `Outcome`-like object (`outcome`, `score`, `reasoning`, `labels`, `raw`,
`error`, token counts) from a `ProviderReply`.
"""
from __future__ import annotations

from . import prompts
from .models import RunResult
from .schemas import JudgeAnswer, Stage1Answer, Stage2Answer, ValidationError, describe_error


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


def apply_judge(out, reply) -> None:
    out.raw = {"judge": reply_record(reply)}
    out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
    out.outcome, answer, out.error = classify(reply, JudgeAnswer)
    if answer is not None:
        out.score, out.reasoning = answer.score, answer.reasoning


def apply_stage1(out, reply, keys, choices=None) -> Stage1Answer | None:
    """Stage 1 of an annotate run; returns the validated answers when stage 2 should follow.
    `choices`: the stage-1 answers the run's prompt version allows (annotate-v2: yes / no)."""
    out.raw = {"stage1": reply_record(reply)}
    out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
    out.outcome, stage1, out.error = classify(reply, Stage1Answer, {"keys": keys, "choices": choices})
    if stage1 is not None:
        out.error = ""
    return stage1


def stage2_text(prompt_text: dict, stage1: Stage1Answer) -> str:
    answers = {k: v.model_dump() for k, v in stage1.answers.items()}
    return prompts.stage2_user_text(prompt_text["stage2"]["user"], answers)


def apply_stage2(out, stage1: Stage1Answer, reply, keys) -> None:
    out.raw["stage2"] = reply_record(reply)
    out.tokens_in += reply.tokens_in
    out.tokens_out += reply.tokens_out
    out.latency_ms += reply.latency_ms
    out.outcome, stage2, error = classify(reply, Stage2Answer, {"keys": keys})
    out.error = f"stage 2: {error}" if error else ""
    if stage2 is not None:
        out.labels = {k: (v, stage1.answers[k].reasoning) for k, v in stage2.labels.items()}
