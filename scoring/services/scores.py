"""Stored labels -> stored consensus and scores (ImageScore), in chunks, under a scoring profile."""
from __future__ import annotations

import json
from typing import Iterable

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from annotations import taxonomy
from annotations.models import Adjudication, Annotator, Image, Label, Labeling
from annotations.services import vispr_labels

from .. import engine
from ..queries import numeric_columns
from ..models import ImageScore, ScoringProfile

CHUNK = 2000


def _chunks(image_ids: Iterable[int] | None, size: int = CHUNK) -> Iterable[list[int]]:
    """Sorted chunks of distinct image ids: of every image (read a chunk at a time, by id) when None; of ids
    kept by the database when they offer `sorted_chunks` (an import's, `cprt_bench.copying.StagedImageIds`)."""
    if hasattr(image_ids, "sorted_chunks"):
        yield from image_ids.sorted_chunks(size)
        return
    if image_ids is None:
        last = None
        while chunk := list(Image.objects.filter(**({} if last is None else {"id__gt": last}))
                            .order_by("id").values_list("id", flat=True)[:size]):
            yield chunk
            last = chunk[-1]
        return
    ids = np.unique(np.fromiter(image_ids, dtype=np.int64))  # an array: 8 bytes an id, not a Python int each
    for i in range(0, len(ids), size):
        yield ids[i : i + size].tolist()


_TABLE = ImageScore._meta.db_table
_COLUMNS = ("image_id", "profile_id", "binary_labels", "n1", "n2", "n3", "n4", "level", "score", "computed_at")
UPSERT = (
    f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
    f"ON CONFLICT (image_id, profile_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[2:])}"
)


def recompute_scores(profile: ScoringProfile, image_ids: Iterable[int] | None = None) -> dict:
    """Recompute consensus and score of images under `profile` (all images when ids are None).

    Streams in chunks: labels are read into arrays, never as model instances, and each chunk's scores are
    written in one statement (one COPY and one upsert on PostgreSQL). Images whose
    consensus set is incomplete lose any stored score (they have no consensus yet).
    """
    tax = taxonomy.active()
    keys = tax.keys
    key_index = {k: i for i, k in enumerate(keys)}
    attr_levels = [tax.level_of[k] for k in keys]
    attr_ids = taxonomy.attribute_ids()
    consensus_ids = list(profile.consensus_annotators.values_list("id", flat=True))
    if not consensus_ids:
        raise ValueError(f"Scoring profile {profile.name!r} has no consensus annotators.")
    ann_index = {a: i for i, a in enumerate(consensus_ids)}
    abstain = dataset_abstentions(consensus_ids, keys)
    stored = incomplete = 0
    # Column of each attribute id in `keys` (-1: an attribute outside the active taxonomy), row of each annotator.
    attr_col = np.full(max(attr_ids.values(), default=0) + 1, -1, dtype=np.int64)
    for key, attribute_id in attr_ids.items():
        if key in key_index:
            attr_col[attribute_id] = key_index[key]
    ann_sorted = np.array(sorted(consensus_ids), dtype=np.int64)
    ann_row = np.array([ann_index[a] for a in ann_sorted], dtype=np.int64)
    for chunk in _chunks(image_ids):
        chunk_ids = np.array(chunk, dtype=np.int64)  # sorted
        values = np.full((len(consensus_ids), len(chunk), len(keys)), np.nan)
        # The id range (beside the list when the chunk has gaps): a range scan of the (annotator, image) index
        # even when the planner's statistics predate the labels (an import's own transaction has just written them).
        in_chunk = {"image_id__gte": chunk[0], "image_id__lte": chunk[-1]}
        if chunk[-1] - chunk[0] + 1 != len(chunk):
            in_chunk["image_id__in"] = chunk
        image, annotator, attribute, value = _columns(Label.objects.filter(**in_chunk, annotator_id__in=consensus_ids)
                                                      .values_list("image_id", "annotator_id", "attribute_id", "value"), 4)
        col = _lookup(attr_col, attribute)
        known = col >= 0
        values[ann_row[np.searchsorted(ann_sorted, annotator[known])], np.searchsorted(chunk_ids, image[known]), col[known]] = value[known]
        chunk_abstain = abstain
        if profile.exclude_assisted:
            chunk_abstain = _without_assisted(values, abstain, in_chunk, consensus_ids, ann_index, chunk_ids)
        adjudications = np.full((len(chunk), len(keys)), np.nan)
        image, attribute, value = _columns(Adjudication.objects.filter(**in_chunk).values_list("image_id", "attribute_id", "value"), 3)
        col = _lookup(attr_col, attribute)
        known = col >= 0
        adjudications[np.searchsorted(chunk_ids, image[known]), col[known]] = value[known]
        binary, complete = engine.consensus_array(values, adjudications, chunk_abstain)
        counts = engine.level_counts_array(binary, attr_levels)
        levels, scores = engine.severity_array(counts, profile.bounds, profile.weights or engine.WEIGHTS)
        # Plain-value rows and one upsert per chunk: building an ImageScore instance per image cost more
        # than computing the scores (bench/import_export.py).
        now = timezone.now()
        keep = np.flatnonzero(complete)
        with transaction.atomic():
            incomplete_ids = chunk_ids[~complete].tolist()
            ImageScore.objects.filter(profile=profile, image_id__in=incomplete_ids).delete()
            if len(keep):
                _upsert(profile.pk, keys, chunk_ids[keep].tolist(), binary[keep].tolist(), counts[keep].tolist(),
                        levels[keep].tolist(), scores[keep].tolist(), now)
        stored += len(keep)
        incomplete += len(chunk) - len(keep)
    return {"scored": stored, "incomplete": incomplete}


def _without_assisted(values: np.ndarray, abstain: np.ndarray | None, in_chunk: dict, consensus_ids: list[int], ann_index: dict,
                      chunk_ids: np.ndarray) -> np.ndarray:
    """A profile that leaves assisted human labels out of the consensus: each assisted labeling of a consensus annotator
    abstains on its image (neither votes nor is waited for; `values` loses its labels). Returns the per-image abstain
    mask (annotators, images, attributes) for engine.consensus_array."""
    shape = values.shape
    mask = np.zeros(shape, dtype=bool) if abstain is None else np.broadcast_to(np.asarray(abstain, dtype=bool)[:, None, :], shape).copy()
    pairs = Labeling.objects.filter(**in_chunk, annotator_id__in=consensus_ids, annotator__kind=Annotator.KIND_HUMAN,
                                    assisted=True).values_list("annotator_id", "image_id")
    for annotator_id, image_id in pairs:
        row, col = ann_index[annotator_id], int(np.searchsorted(chunk_ids, image_id))
        mask[row, col, :] = True
        values[row, col, :] = np.nan
    return mask


def _columns(queryset, width: int) -> list[np.ndarray]:
    sql, params = queryset.query.sql_with_params()
    return numeric_columns(sql, params, width)


def _lookup(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """table[ids], -1 for ids beyond the table."""
    out = np.full(len(ids), -1, dtype=np.int64)
    inside = ids < len(table)
    out[inside] = table[ids[inside]]
    return out


def _upsert(profile_id: int, keys, image_ids: list, binary: list, counts: list, levels: list, scores: list, now) -> None:
    """Insert or update the ImageScore rows of one chunk: on PostgreSQL one statement over the chunk sent as one
    JSON document (no staging table: a long import's transaction would create and drop one per chunk);
    elsewhere one executemany."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            stamp = connection.ops.adapt_datetimefield_value(now)
            cursor.executemany(UPSERT, [(image_id, profile_id, json.dumps(dict(zip(keys, binary[i]))), *counts[i], levels[i], scores[i], stamp)
                                        for i, image_id in enumerate(image_ids)])
            return
        chunk = json.dumps([[image_id, dict(zip(keys, binary[i])), *counts[i], levels[i], scores[i]] for i, image_id in enumerate(image_ids)])
        cursor.execute(
            f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) SELECT (r->>0)::bigint, %s, r->1, (r->>2)::smallint, (r->>3)::smallint, "
            "(r->>4)::smallint, (r->>5)::smallint, (r->>6)::smallint, (r->>7)::double precision, %s "
            "FROM jsonb_array_elements(%s::jsonb) AS r ORDER BY 1 "
            f"ON CONFLICT (image_id, profile_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[2:])}",
            [profile_id, now, chunk],
        )


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
