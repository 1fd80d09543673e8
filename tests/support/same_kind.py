"""A tiny run kind that exists only in tests: two images per item (an image and the next one of the run,
cyclically), answer {"same": bool, "reasoning": str}, score 1 when the model says they are the same.

It proves that a kind is a folder plus one registry line: the `same_kind` fixture registers it (the
production registry stays annotate and judge) and the engine runs it like any other kind. Use it with
`from tests.support.same_kind import same_kind  # noqa: F401`.
"""
from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from annotations.models import Image
from inference.kinds import Item, Kind
from inference.outcomes import classify, reply_record

SCHEMA = {
    "type": "object",
    "properties": {"same": {"type": "boolean"}, "reasoning": {"type": "string"}},
    "required": ["same", "reasoning"],
    "additionalProperties": False,
}


class SameAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    same: StrictBool
    reasoning: StrictStr = Field(max_length=4000)


class SameKind(Kind):
    key = "same"
    label = "same picture twice?"
    stages = ("same",)
    versions = ("same-v1",)
    output_tokens = {"same": 40}

    @classmethod
    def images_per_item(cls) -> int:
        return 2

    @classmethod
    def render(cls, version, strategy, counterfactual_faces, tax) -> dict:
        if version not in cls.versions:
            raise ValueError(f"Unknown same prompt version {version!r}.")
        texts = {"system": "You compare pictures.", "user": "Are the two attached pictures the same picture?"}
        return {"same": texts, "schemas": {"same": SCHEMA}}

    def items(self, image_ids):  # its items are images (item id = image id), as the base kind's
        order = list(self.run.image_ids)
        partner = {image_id: order[(i + 1) % len(order)] for i, image_id in enumerate(order)}
        wanted = [i for i in image_ids if i in partner]
        files = dict(Image.objects.filter(pk__in=wanted + [partner[i] for i in wanted]).exclude(file="").values_list("pk", "file"))
        return [Item(i, i, (files[i], files[partner[i]])) for i in sorted(wanted) if i in files and partner[i] in files]

    def apply(self, stage, out, reply, carry):
        out.raw = {"same": reply_record(reply)}
        out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
        out.outcome, answer, out.error = classify(reply, SameAnswer)
        if answer is not None:
            out.score, out.reasoning = (1.0 if answer.same else 0.0), answer.reasoning
        return None


@pytest.fixture
def same_kind(monkeypatch):
    """Register the test-only kind for one test (one registry line, as a real kind's)."""
    from inference import kinds

    monkeypatch.setitem(kinds.KINDS, SameKind.key, SameKind)
    return SameKind
