"""What a re-identification answer must be."""
from __future__ import annotations

import math

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator

from inference.schemas import MAX_REASONING, _Strict


def reid_json_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "declined": {"type": "boolean"},
            "same_person": {"type": "boolean"},
            "probability_same": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["reasoning", "declined", "same_person", "probability_same"],
        "additionalProperties": False,
    }


class ReidAnswer(_Strict):
    reasoning: StrictStr = Field(max_length=MAX_REASONING)
    declined: StrictBool
    same_person: StrictBool
    probability_same: StrictFloat | StrictInt

    @field_validator("probability_same")
    @classmethod
    def _unit(cls, value):
        if isinstance(value, bool) or not math.isfinite(value) or not 0 <= value <= 1:
            raise ValueError(f"probability_same must be a number in [0, 1], got {value!r}")
        return float(value)
