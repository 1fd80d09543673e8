"""What a model must answer, as JSON schemas (sent to the provider) and pydantic models (enforced here).

Model output is untrusted input: a reply counts only if it validates here, whatever the provider
claimed about structured output.
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError, ValidationInfo, field_validator

__all__ = ["INFERABLE_CHOICES", "JudgeAnswer", "Stage1Answer", "Stage2Answer", "ValidationError", "describe_error"]

MAX_REASONING = 4000
INFERABLE_CHOICES = ("yes", "uncertain", "no")  # every stage-1 answer any prompt version accepts (inference.prompts)


def judge_json_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }


def stage1_json_schema(keys, choices=INFERABLE_CHOICES) -> dict:
    item = {
        "type": "object",
        "properties": {"inferable": {"type": "string", "enum": list(choices)}, "reasoning": {"type": "string"}},
        "required": ["inferable", "reasoning"],
        "additionalProperties": False,
    }
    answers = {"type": "object", "properties": {k: item for k in keys}, "required": list(keys), "additionalProperties": False}
    return {"type": "object", "properties": {"answers": answers}, "required": ["answers"], "additionalProperties": False}


def stage2_json_schema(keys) -> dict:
    value = {"type": "number", "enum": [0, 0.5, 1]}
    labels = {"type": "object", "properties": {k: value for k in keys}, "required": list(keys), "additionalProperties": False}
    return {"type": "object", "properties": {"labels": labels}, "required": ["labels"], "additionalProperties": False}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class JudgeAnswer(_Strict):
    reasoning: StrictStr = Field(max_length=MAX_REASONING)
    score: StrictFloat | StrictInt

    @field_validator("score")
    @classmethod
    def _in_unit_interval(cls, value):
        if isinstance(value, bool) or not math.isfinite(value) or not 0 <= value <= 1:
            raise ValueError(f"score must be a number in [0, 1], got {value!r}")
        return float(value)


class Stage1Item(_Strict):
    inferable: Literal["yes", "uncertain", "no"]
    reasoning: StrictStr = Field(max_length=MAX_REASONING)

    @field_validator("inferable")
    @classmethod
    def _allowed_by_the_prompt_version(cls, value, info: ValidationInfo):
        choices = (info.context or {}).get("choices") or INFERABLE_CHOICES
        if value not in choices:
            raise ValueError(f"inferable must be one of {', '.join(choices)} for this prompt version, got {value!r}")
        return value


def stage1_choices(schema: dict) -> tuple[str, ...]:
    """The stage-1 answers a run's stored schema allows (annotate-v2: yes / no)."""
    try:
        item = next(iter(schema["properties"]["answers"]["properties"].values()))
        return tuple(item["properties"]["inferable"]["enum"])
    except (KeyError, StopIteration, TypeError):
        return INFERABLE_CHOICES


def _check_keys(found, info: ValidationInfo):
    expected = set((info.context or {}).get("keys", ()))
    if not expected:
        raise ValueError("validation needs the taxonomy keys in its context")
    missing, extra = sorted(expected - set(found)), sorted(set(found) - expected)
    if missing or extra:
        raise ValueError(f"keys must be exactly the {len(expected)} attributes; missing {missing}, unexpected {extra}")
    return found


class Stage1Answer(_Strict):
    answers: dict[str, Stage1Item]

    @field_validator("answers")
    @classmethod
    def _all_keys(cls, value, info: ValidationInfo):
        return _check_keys(value, info)


class Stage2Answer(_Strict):
    labels: dict[str, StrictFloat | StrictInt]

    @field_validator("labels")
    @classmethod
    def _values_and_keys(cls, value, info: ValidationInfo):
        _check_keys(value, info)
        for key, label in value.items():
            if isinstance(label, bool) or label not in (0, 0.5, 1):
                raise ValueError(f"label for {key} must be 0, 0.5 or 1, got {label!r}")
        return {k: float(v) for k, v in value.items()}


def describe_error(exc: ValidationError) -> str:
    """A short, readable account of what was wrong with a model's answer."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "answer"
        parts.append(f"{where}: {err['msg']}")
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(parts) + more
