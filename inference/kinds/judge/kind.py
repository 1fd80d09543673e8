"""The judge kind: prompts (`inference.prompts`, judge versions and strategies), the answer
{"reasoning", "score"}, a score per image; its metrics are refreshed by scoring when a run finishes."""
from __future__ import annotations

from functools import partial

from django.db import transaction
from django.urls import reverse

from ... import prompts, signals
from ...outcomes import classify, reply_record
from ..base import Kind
from .schema import JudgeAnswer, judge_json_schema


class JudgeKind(Kind):
    key = "judge"
    counterfactuals = True
    label = "judge severity"
    stages = ("judge",)
    versions = prompts.JUDGE_VERSIONS
    strategies = prompts.STRATEGIES
    default_strategy = "taxonomy"  # the paper's main judge setting; the form and the API take it when left blank
    output_tokens = {"judge": 150}

    @classmethod
    def leaderboard_url(cls) -> str | None:
        return reverse("scoring:leaderboard")

    @classmethod
    def render(cls, version, strategy, counterfactual_faces, tax) -> dict:
        return {"judge": prompts.judge_prompt(version, strategy, counterfactual_faces, tax), "schemas": {"judge": judge_json_schema()}}

    @classmethod
    def catalogue(cls, tax) -> list[dict]:
        items = []
        for version in cls.versions:
            for strategy in prompts.STRATEGIES:
                for cf in (False, True):
                    prompt = prompts.judge_prompt(version, strategy, cf, tax)
                    title = f"{prompts.version_label(version)} · {strategy}" + (" + counterfactual_faces" if cf else "")
                    items.append({"title": title, "version": version, "texts": [("system", prompt["system"]), ("user", prompt["user"])]})
        return items

    def apply(self, stage, out, reply, carry):
        out.raw = {"judge": reply_record(reply)}
        out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
        out.outcome, answer, out.error = classify(reply, JudgeAnswer)
        if answer is not None:
            out.score, out.reasoning = answer.score, answer.reasoning
        return None

    def finished(self) -> None:
        transaction.on_commit(partial(signals.judge_run_finished.send, sender=type(self.run), run_id=self.run.pk))
