"""The run kind: one VISPR image per request; the prompt lists every attribute of the imported
attributes.tsv with its description and asks for one JSON object, attribute id -> probability in [0, 1].

Parsing is strict (model output is untrusted): the answer must be one JSON object whose keys are
attribute ids the run asked about and whose values are numbers in [0, 1] (not booleans, not NaN).
[decision] An attribute the answer leaves out counts as probability 0 and is counted "omitted"; a
refusal (or an answer that does not parse) leaves the image without prediction, which lowers the
run's coverage, as CPRT runs do. The parsed answer is stored beside the raw reply in
`RunResult.raw["answer"]` = {"p": {id: probability}, "omitted": [ids]}; the figures read only that.
"""
from __future__ import annotations

import math
from typing import ClassVar

from django.urls import reverse

from inference.kinds.base import Kind
from inference.models import RunResult
from inference.outcomes import reply_record

from . import attributes, launch

STAGE = "predict"
VERSION = "vpa-v1"
SYSTEM = ("You are a visual privacy advisor. You look at one image and estimate, for each privacy attribute listed, "
          "the probability that the image shows it. You never identify people.")
USER_HEAD = ("For each attribute below (id: description), give the probability, a number from 0 to 1, that the image shows it. "
             "Answer with one JSON object that maps every attribute id to its probability, and nothing else.\n\n")


def prompt_texts(attribute_list: list[tuple[str, str]]) -> dict:
    user = USER_HEAD + "\n".join(f"{aid}: {description or aid}" for aid, description in attribute_list)
    return {"system": SYSTEM, "user": user}


def answer_schema(ids: list[str]) -> dict:
    """The structured-output schema (strict providers need every key required; others may still omit keys)."""
    value = {"type": "number", "minimum": 0, "maximum": 1}
    return {"type": "object", "properties": {a: value for a in ids}, "required": list(ids), "additionalProperties": False}


def parse_answer(parsed, ids: list[str]) -> tuple[dict[str, float], list[str]]:
    """({id: probability} as answered, [omitted ids in the run's order]); ValueError saying what is wrong."""
    if not isinstance(parsed, dict):
        raise ValueError(f"the answer must be one JSON object of attribute id -> probability, got {type(parsed).__name__}")
    known = set(ids)
    unexpected = sorted(str(k)[:64] for k in parsed if k not in known)
    if unexpected:
        raise ValueError(f"unexpected attribute id(s): {', '.join(unexpected[:10])}{' …' if len(unexpected) > 10 else ''}")
    probabilities = {}
    for key, value in parsed.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
            raise ValueError(f"{key}: the probability must be a number in [0, 1], got {str(value)[:40]!r}")
        probabilities[key] = float(value)
    return probabilities, [a for a in ids if a not in probabilities]


class VisprAttributesKind(Kind):
    key = "vispr-attributes"
    label = "VISPR attribute prediction (VPA)"
    stages = (STAGE,)
    versions = (VERSION,)
    output_tokens = {STAGE: 900}  # ~13 tokens per attribute of the 68
    unit: ClassVar[str] = "images"
    launch_form: ClassVar[type] = launch.LaunchFields
    predictions_template = "vispr_attributes/_predictions.html"

    # --- launch -------------------------------------------------------------------------------

    @classmethod
    def unavailable(cls) -> str | None:
        return attributes.missing()

    @classmethod
    def render(cls, version, strategy, counterfactual_faces, tax) -> dict:
        if version not in cls.versions:
            raise ValueError(f"Unknown prompt version {version!r} for {cls.label}; known: {', '.join(cls.versions)}.")
        if strategy or counterfactual_faces:
            raise ValueError(f"{cls.label} runs take no strategy and no counterfactual instruction.")
        attribute_list = attributes.imported()
        if not attribute_list:
            raise ValueError(f"No VISPR attributes are imported; {attributes.IMPORT_HINT}.")
        return {STAGE: prompt_texts(attribute_list), "schemas": {STAGE: answer_schema([a for a, _ in attribute_list])},
                "attributes": [list(a) for a in attribute_list]}

    @classmethod
    def launch_errors(cls, data: dict) -> dict[str, str]:
        errors = super().launch_errors(data)
        if data.get("counterfactual_faces"):
            errors["counterfactual_faces"] = "The counterfactual-faces instruction applies to judge runs only."
        if data.get("face_variant"):
            errors["face_variant"] = f"{cls.label} runs ask about the original images only."
        return errors

    @classmethod
    def clean_options(cls, options: dict) -> dict:
        why = cls.unavailable()
        if why:
            raise ValueError(why)
        return launch.clean(options)

    @classmethod
    def launch_items(cls, image_ids, options) -> list[int]:
        """The selected images that the VISPR import wrote (of the chosen VISPR split)."""
        images = attributes.vispr_images()
        if options.get("vispr_split"):
            images = images.filter(vispr_split=options["vispr_split"])
        keep = set(images.values_list("pk", flat=True))
        return sorted(i for i in image_ids if i in keep)

    @classmethod
    def catalogue(cls, tax) -> list[dict]:
        attribute_list = attributes.imported() or [("<attribute id>", "<its description from attributes.tsv>")]
        texts = prompt_texts(attribute_list)
        return [{"title": f"{cls.label} · one image, every attribute", "version": VERSION,
                 "texts": [("system", texts["system"]), ("user", texts["user"])]}]

    @classmethod
    def figures_url(cls, run) -> str:
        return reverse("vispr_attributes:figures", args=[run.pk])

    # --- execution ----------------------------------------------------------------------------

    def prepare(self):
        self.ids = [a for a, _ in self.prompt_text.get("attributes", [])]
        return self

    def apply(self, stage, out, reply, carry):
        out.raw = {STAGE: reply_record(reply)}
        out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
        if reply.refusal:
            out.outcome, out.error = RunResult.OUTCOME_REFUSED, f"refused: {reply.refusal}"
            return None
        if reply.parsed is None:
            out.outcome, out.error = RunResult.OUTCOME_UNPARSEABLE, reply.parse_error or "no JSON in the response"
            return None
        try:
            probabilities, omitted = parse_answer(reply.parsed, self.ids)
        except ValueError as exc:
            out.outcome, out.error = RunResult.OUTCOME_UNPARSEABLE, str(exc)
            return None
        out.outcome = RunResult.OUTCOME_OK
        out.raw["answer"] = {"p": probabilities, "omitted": omitted}
        likely = sum(p >= 0.5 for p in probabilities.values())
        out.reasoning = f"{likely} of {len(self.ids)} attributes at p ≥ 0.5; {len(omitted)} omitted"
        return None

    def decorate_predictions(self, results) -> None:
        for result in results:
            answer = (result.raw or {}).get("answer") or {}
            top = sorted((answer.get("p") or {}).items(), key=lambda kv: -kv[1])[:5]
            result.top_attributes = [(a, round(p, 3)) for a, p in top]
            result.omitted_count = len(answer.get("omitted") or ())
