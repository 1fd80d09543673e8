"""Helpers shared by the labeling tests: complete form data and a claimed labeling."""
from __future__ import annotations

from annotations import taxonomy
from annotations.services import labeling_queue
from annotations.models import Label


def all_answers(value=0) -> dict:
    """{key: value} for every attribute of the active taxonomy (an API body's answers)."""
    return {k: value for k in taxonomy.active().keys}


def answers(default: str = "0", **overrides) -> dict:
    """value-<key> for every attribute of the active taxonomy."""
    return {f"value-{k}": overrides.get(k, default) for k in taxonomy.active().keys}


def form_data(labeling, default: str = "0", version: int | None = None, **overrides) -> dict:
    data = answers(default, **overrides)
    data["version"] = labeling.version if version is None else version
    return data


def claim(user):
    labeling = labeling_queue.claim_next(user)
    assert labeling is not None, "expected an image in the queue"
    return labeling


def labels_of(labeling) -> dict:
    return {
        key: value
        for key, value in Label.objects.filter(image_id=labeling.image_id, annotator_id=labeling.annotator_id).values_list("attribute__key", "value")
    }
