"""The run kind `binary`: a local classifier's P(private) per image, stored as the result's score.

It sends no text (the request's texts are empty; the onnx provider, inference/providers/onnx/, reads
only the image) and is never a severity judge: its runs have their own figures page and leaderboard
(this folder), never CPRT's severity leaderboard. Which classifier answered (file digest, classes,
preprocessing) is the run's `request_params`, recorded by the provider at launch. The key stays
"binary": it is what `Run.task` holds for every classifier run made before the benchmark was a folder.
"""
from __future__ import annotations

from django.urls import reverse
from pydantic import BaseModel, ConfigDict, Field

from inference.kinds.base import Kind
from inference.models import Run
from inference.outcomes import classify, reply_record
from inference.providers.onnx.models import ClassifierModel

PROVIDER = "onnx"
REGISTER_HINT = "register a classifier: manage.py register_classifier NAME FILE.onnx (the Classifiers page lists them)"


class BinaryAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    p_private: float = Field(ge=0, le=1)
    probabilities: dict[str, float]


class BinaryKind(Kind):
    key = "binary"
    label = "binary private/public (local classifier)"
    stages = ("classify",)
    versions = ("binary-v1",)
    output_tokens = {"classify": 0}
    modes = ("online",)
    providers = (PROVIDER,)

    @classmethod
    def unavailable(cls) -> str | None:
        if not ClassifierModel.objects.exists():
            return REGISTER_HINT
        return super().unavailable()

    @classmethod
    def figures_url(cls, run) -> str:
        return reverse("classifiers:figures", args=[run.pk])

    @classmethod
    def leaderboard_url(cls) -> str | None:
        return reverse("classifiers:leaderboard")

    @classmethod
    def render(cls, version, strategy, counterfactual_faces, tax) -> dict:
        return {"classify": {"system": "", "user": ""}, "schemas": {"classify": BinaryAnswer.model_json_schema()}}

    @classmethod
    def launch_errors(cls, data: dict) -> dict[str, str]:
        errors = super().launch_errors(data)
        if data.get("provider") != PROVIDER:
            errors["provider"] = "Binary runs use a local classifier: choose the onnx provider."
        elif not ClassifierModel.objects.filter(name=data.get("model_name") or "").exists():
            names = list(ClassifierModel.objects.values_list("name", flat=True)[:20])
            errors["model_name"] = (f"No local classifier named {data.get('model_name')!r} is registered; "
                                    + (f"registered: {', '.join(names)}." if names else "register one with manage.py register_classifier."))
        if data.get("counterfactual_faces"):
            errors["counterfactual_faces"] = "Binary runs send no prompt: counterfactual faces do not apply."
        if data.get("mode") == Run.MODE_BATCH:
            errors["mode"] = "Binary runs are online only (a local model has no batch API)."
        return errors

    @classmethod
    def images_per_item(cls) -> int:
        return 1

    def apply(self, stage, out, reply, carry):
        out.raw = {"classify": reply_record(reply)}
        out.latency_ms = reply.latency_ms
        out.outcome, answer, out.error = classify(reply, BinaryAnswer)
        if answer is not None:
            out.score = answer.p_private
            out.reasoning = f"P(private) = {answer.p_private:.4f}"
        return None
