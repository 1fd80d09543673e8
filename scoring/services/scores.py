"""Stored labels -> stored consensus and scores (ImageScore), in chunks, under a scoring profile."""
from __future__ import annotations

import json
from typing import Iterable

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from annotations import taxonomy
from annotations.models import Adjudication, Annotator, Image, Label
from annotations.services import vispr_labels

from .. import engine
from ..models import ImageScore, ScoringProfile

CHUNK = 2000


def _chunks(ids: list[int], size: int = CHUNK) -> Iterable[list[int]]:
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


_TABLE = ImageScore._meta.db_table
_COLUMNS = ("image_id", "profile_id", "binary_labels", "n1", "n2", "n3", "n4", "level", "score", "computed_at")
UPSERT = (
    f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
    f"ON CONFLICT (image_id, profile_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[2:])}"
)


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
    abstain = dataset_abstentions(consensus_ids, keys)
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
        binary, complete = engine.consensus_array(values, adjudications, abstain)
        counts = engine.level_counts_array(binary, attr_levels)
        levels, scores = engine.severity_array(counts, profile.bounds, profile.weights or engine.WEIGHTS)
        # Plain-value rows and one upsert per chunk: building an ImageScore instance per image cost more
        # than computing the scores (bench/import_export.py).
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        rows = [
            (image_id, profile.pk, json.dumps({k: int(binary[i, j]) for j, k in enumerate(keys)}),
             int(counts[i, 0]), int(counts[i, 1]), int(counts[i, 2]), int(counts[i, 3]), int(levels[i]), float(scores[i]), now)
            for i, image_id in enumerate(chunk)
            if complete[i]
        ]
        with transaction.atomic():
            incomplete_ids = [image_id for i, image_id in enumerate(chunk) if not complete[i]]
            ImageScore.objects.filter(profile=profile, image_id__in=incomplete_ids).delete()
            if rows:
                with connection.cursor() as cursor:
                    cursor.executemany(UPSERT, rows)
        stored += len(rows)
        incomplete += len(chunk) - len(rows)
    return {"scored": stored, "incomplete": incomplete}


def dataset_abstentions(annotator_ids: list[int], keys) -> np.ndarray | None:
    """(annotators, attributes) bool: a dataset annotator (VISPR's mapped labels) never labels the
    attributes its mapping file leaves without a VISPR attribute; None when the set holds none."""
    datasets = set(Annotator.objects.filter(id__in=annotator_ids, kind=Annotator.KIND_DATASET).values_list("id", flat=True))
    if not datasets:
        return None
    unlabeled = {key for key, ids in vispr_labels.read_mapping().by_attribute.items() if not ids}
    return np.array([[a in datasets and k in unlabeled for k in keys] for a in annotator_ids], dtype=bool)


def rescore_image(image_id: int) -> None:
    """Recompute one image under every profile (after a label change or an adjudication)."""
    for profile in ScoringProfile.objects.filter(consensus_annotators__isnull=False).distinct():
        recompute_scores(profile, [image_id])
