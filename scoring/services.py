"""Turn stored labels into stored consensus and scores (reads the ORM, computes with scoring.engine)."""
from __future__ import annotations

from typing import Iterable

import numpy as np
from django.db import transaction

from annotations import taxonomy
from annotations.models import Adjudication, Image, Label

from . import engine
from .models import ImageScore, ScoringProfile

CHUNK = 2000


def _chunks(ids: list[int], size: int = CHUNK) -> Iterable[list[int]]:
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def recompute_scores(profile: ScoringProfile, image_ids: Iterable[int] | None = None) -> dict:
    """Recompute consensus and score of images under `profile` (all images when ids are None).

    Streams in chunks: labels are read as value tuples, never as model instances. Images whose
    consensus set is incomplete lose any stored score (they have no consensus yet).
    """
    tax = taxonomy.active()
    keys = tax.keys
    key_index = {k: i for i, k in enumerate(keys)}
    attr_levels = [tax.level_of[k] for k in keys]
    attr_ids = taxonomy.attribute_ids()
    attr_key_by_id = {v: k for k, v in attr_ids.items()}
    consensus_ids = list(profile.consensus_annotators.values_list("id", flat=True))
    if not consensus_ids:
        raise ValueError(f"Scoring profile {profile.name!r} has no consensus annotators.")
    ann_index = {a: i for i, a in enumerate(consensus_ids)}
    if image_ids is None:
        ids = list(Image.objects.order_by("id").values_list("id", flat=True))
    else:
        ids = sorted(set(image_ids))
    stored = incomplete = 0
    for chunk in _chunks(ids):
        pos = {image_id: i for i, image_id in enumerate(chunk)}
        values = np.full((len(consensus_ids), len(chunk), len(keys)), np.nan)
        for image_id, annotator_id, attribute_id, value in Label.objects.filter(
            image_id__in=chunk, annotator_id__in=consensus_ids
        ).values_list("image_id", "annotator_id", "attribute_id", "value"):
            key = attr_key_by_id.get(attribute_id)
            if key is not None:
                values[ann_index[annotator_id], pos[image_id], key_index[key]] = value
        adjudications = np.full((len(chunk), len(keys)), np.nan)
        for image_id, attribute_id, value in Adjudication.objects.filter(image_id__in=chunk).values_list(
            "image_id", "attribute_id", "value"
        ):
            key = attr_key_by_id.get(attribute_id)
            if key is not None:
                adjudications[pos[image_id], key_index[key]] = value
        binary, complete = engine.consensus_array(values, adjudications)
        counts = engine.level_counts_array(binary, attr_levels)
        levels, scores = engine.severity_array(counts, profile.bounds, profile.weights or engine.WEIGHTS)
        rows = []
        for i, image_id in enumerate(chunk):
            if not complete[i]:
                continue
            rows.append(
                ImageScore(
                    image_id=image_id,
                    profile=profile,
                    binary_labels={k: int(binary[i, j]) for j, k in enumerate(keys)},
                    n1=int(counts[i, 0]), n2=int(counts[i, 1]), n3=int(counts[i, 2]), n4=int(counts[i, 3]),
                    level=int(levels[i]),
                    score=float(scores[i]),
                )
            )
        with transaction.atomic():
            incomplete_ids = [image_id for i, image_id in enumerate(chunk) if not complete[i]]
            ImageScore.objects.filter(profile=profile, image_id__in=incomplete_ids).delete()
            ImageScore.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["image", "profile"],
                update_fields=["binary_labels", "n1", "n2", "n3", "n4", "level", "score", "computed_at"],
            )
        stored += len(rows)
        incomplete += len(chunk) - len(rows)
    return {"scored": stored, "incomplete": incomplete}


def rescore_image(image_id: int) -> None:
    """Recompute one image under every profile (after a label change or an adjudication)."""
    for profile in ScoringProfile.objects.all():
        if profile.consensus_annotators.exists():
            recompute_scores(profile, [image_id])
