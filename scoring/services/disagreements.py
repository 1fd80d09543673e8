"""The disagreement queue: images with disputed attributes and what resolving them could change.

The queue is computed as a whole (scoring.disputes over every counted label) and stored as one
`DisputedImage` row per image, keyed by its ComputedMetrics entry; the entry itself holds only the
annotators and the order of the attribute and pair bits. A page filters, orders and slices the rows
in SQL (`dispute_rows`), so it reads one page, whatever the size of the queue.
"""
from __future__ import annotations

import json

import numpy as np
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from annotations import label_version
from annotations.models import Image

from .. import disputes, queries
from ..models import ComputedMetrics, DisputedImage, ImageScore, ScoringProfile
from .cache import cached

MASK_BITS = 62  # attributes / pairs beyond this many are filtered without the bit mask (see dispute_rows)
_COLUMNS = ("queue", "image_id", "impact", "n_disputed", "level_changes", "score_lo", "score_hi", "level_lo", "level_hi",
            "disputed", "pairs", "attribute_mask", "pair_mask")
INSERT = (f"INSERT INTO {DisputedImage._meta.db_table} ({', '.join(_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
          "ON CONFLICT (queue, image_id) DO NOTHING")
SORTS = {
    "impact": ("-impact", "image_id"),
    "level": ("-level_changes", "-impact", "image_id"),
    "disputed": ("-n_disputed", "-impact", "image_id"),
    "id": ("image_id",),
}


def queue_key(profile: ScoringProfile, split: str = "") -> str:
    return f"disagreements:{split or 'all'}:profile:{profile.pk}"


def queue_fingerprint(profile: ScoringProfile, split: str = "", version: int | None = None) -> str:
    """The fingerprint of a queue: the label version (`version`, or the current one), the split and the
    profile's boundaries. "rows-table": entries stored before the queue became DisputedImage rows are stale."""
    return queries.digest(queries.label_fingerprint(split, version=version), profile.pk, profile.lo1, profile.lo2, profile.lo3,
                          "rows-table")


def disagreement_queue(profile: ScoringProfile, split: str = "") -> dict:
    """The stored queue's entry: {"key", "annotators", "keys", "pairs", "count"} (computed when stale)."""
    key = queue_key(profile, split)

    def compute():
        data = queries.load_labels(split=split)
        adjudications = queries.adjudication_array(data.image_ids, data.keys)
        # Pairs of annotators who disagree on an image (any attribute): one vectorised pass per pair.
        pair_index = [(a, b) for a in range(len(data.names)) for b in range(a + 1, len(data.names))]
        pair_ids = [[data.annotator_ids[a], data.annotator_ids[b]] for a, b in pair_index]
        rows = _queue_rows(key, data.image_ids, data.values, adjudications, data, pair_index, pair_ids, profile)
        _store(key, rows)
        annotators = [{"id": a, "name": n, "kind": k} for a, n, k in zip(data.annotator_ids, data.names, data.kinds)]
        return {"key": key, "annotators": annotators, "keys": list(data.keys), "pairs": pair_ids, "count": len(rows)}

    return cached(key, queue_fingerprint(profile, split), compute, spec={"kind": "disagreements", "profile": profile.pk, "split": split},
                  size=lambda: queries.labelings_estimate(split))


def _queue_rows(key: str, image_ids: list[int], values: np.ndarray, adjudications: np.ndarray, data, pair_index: list,
                pair_ids: list, profile: ScoringProfile) -> list[tuple]:
    """The queue's rows (INSERT's columns) of the disputed ones of `image_ids`, from their labels `values`
    (annotators, images, attributes) and adjudications; `data`: the LabelSet giving the attributes' keys and levels."""
    impact = disputes.dispute_impact(values, adjudications, data.attr_levels, profile.bounds)
    pair_masks = np.stack([disputes.pair_disagrees(values, a, b) for a, b in pair_index], axis=1) if pair_index \
        else np.zeros((len(image_ids), 0), dtype=bool)
    disputed = np.asarray(impact["disputed"], dtype=bool)
    attribute_bits = _bits(disputed)
    pair_bits = _bits(pair_masks)
    return [
        (key, image_ids[i], float(impact["impact"][i]), int(impact["n_disputed"][i]), bool(impact["level_changes"][i]),
         float(impact["score_lo"][i]), float(impact["score_hi"][i]), int(impact["level_lo"][i]), int(impact["level_hi"][i]),
         json.dumps([data.keys[j] for j in np.flatnonzero(disputed[i])]),
         json.dumps([pair_ids[j] for j in np.flatnonzero(pair_masks[i])]), int(attribute_bits[i]), int(pair_bits[i]))
        for i in np.flatnonzero(impact["n_disputed"] > 0)
    ]


def follow_adjudication(image_id: int) -> None:
    """follow_image for an adjudication: its write counts one on the label version."""
    follow_image(image_id, 1)


def follow_image(image_id: int, writes: int) -> None:
    """Bring every stored queue that was current just before a write of `image_id`'s labels or adjudications up to
    date with it, by recomputing that image's row alone (call in the writing transaction, after the write, with the
    label-version writes it counted).

    [decision] (issue 37) An adjudication, or a reviewer's submission, changes the queue's row of its image and
    nothing else (the annotators, attributes and pairs stay; a first submission by a new annotator does not fit
    and is left to the job), so a queue current before it is updated in place in the same transaction: the
    image's labels and adjudications are read, its row written again (or removed when nothing is disputed any
    more) and the entry given the new label version's fingerprint, where the whole queue took 14-21 s at 100,000
    images (bench/scale.py). "Current just before" is checked exactly: the entry's fingerprint must be that of the
    version read now less the writes this write counted (an adjudication one, write_adjudication's; a submission
    its labels' and its labeling's); writes committed meanwhile by others make the version larger and the check
    fail (it can never pass for a queue that misses a write; counting fewer writes than made only makes it fail).
    A queue that fails it, or whose annotators or attributes the image's labels do not fit, is left stale for
    its refresh job. The entries are locked (in key order) against a refresh job storing a queue meanwhile,
    whose rows are then written after these under an older fingerprint: stale again, so recomputed. Model runs'
    labels are not followed: a result a lane writes would wait on these locks. The version is read after the locks
    are held: reviewers count on streams of their own, so a submission committed while this one waited for the locks
    (it followed the queue and made its fingerprint count its writes) is then in the version too; read before, it was
    not, and two reviewers saving at once left the queue stale (bench/labeling_load.py --queue)."""
    entries = list(ComputedMetrics.objects.select_for_update().filter(key__startswith="disagreements:").order_by("key"))
    if not entries:
        return
    version = label_version.current()
    for entry in entries:
        profile = ScoringProfile.objects.filter(pk=entry.spec.get("profile")).first()
        split = entry.spec.get("split", "")
        if profile is None or entry.fingerprint != queue_fingerprint(profile, split, version - writes):
            continue
        data = _follow(entry, profile, split, image_id)
        if data is not None:
            ComputedMetrics.objects.filter(pk=entry.pk).update(fingerprint=queue_fingerprint(profile, split, version), data=data,
                                                               computed_at=timezone.now())


def _follow(entry: ComputedMetrics, profile: ScoringProfile, split: str, image_id: int) -> dict | None:
    """The queue's data after writing `image_id`'s row again (None: the image's labels do not fit the queue)."""
    queue = entry.data
    if split and not Image.objects.filter(pk=image_id, split=split).exists():
        return queue  # not in this split: nothing in this queue reads it
    labels = queries.load_labels(split=split, image_ids=[image_id])
    ids = [a["id"] for a in queue["annotators"]]
    if list(labels.keys) != queue["keys"] or not set(labels.annotator_ids) <= set(ids):
        return None
    values = np.full((len(ids), 1, len(labels.keys)), np.nan)
    for k, annotator_id in enumerate(labels.annotator_ids):
        values[ids.index(annotator_id)] = labels.values[k]
    pair_index = [(a, b) for a in range(len(ids)) for b in range(a + 1, len(ids))]
    rows = _queue_rows(entry.key, [image_id], values, queries.adjudication_array([image_id], labels.keys), labels, pair_index,
                       queue["pairs"], profile)
    with connection.cursor() as cursor:
        _lock_queue(cursor, entry.key)
        removed, _ = DisputedImage.objects.filter(queue=entry.key, image_id=image_id).delete()
        if rows:
            cursor.execute(INSERT, rows[0])
    return {**queue, "count": queue["count"] - removed + len(rows)}


def _lock_queue(cursor, key: str) -> None:
    """On PostgreSQL, a transaction-scoped lock on the queue's rows (writers of one queue's rows take turns)."""
    if connection.vendor == "postgresql":
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{DisputedImage._meta.db_table}:{key}"])


def _store(key: str, rows: list[tuple]) -> None:
    """Replace the queue's rows: plain tuples, no model instance per image; on PostgreSQL one COPY (30,000
    rows: 0.4 s where the executemany took 3.5 s, issue 37), after a transaction-scoped lock on the queue, so
    two refreshes of one queue (a lease taken over after it expired) write one after the other, never
    into each other's rows; elsewhere one executemany that skips a row already there."""
    with transaction.atomic(), connection.cursor() as cursor:
        _lock_queue(cursor, key)
        DisputedImage.objects.filter(queue=key).delete()
        if not rows:
            return
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {DisputedImage._meta.db_table} ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cursor.executemany(INSERT, rows)


def _bits(mask: np.ndarray) -> np.ndarray:
    """(images, k) bool -> (images,) int64 with bit j set for column j < MASK_BITS."""
    k = min(mask.shape[1], MASK_BITS)
    weights = np.left_shift(np.int64(1), np.arange(k, dtype=np.int64))
    return (mask[:, :k].astype(np.int64) * weights).sum(axis=1) if k else np.zeros(mask.shape[0], dtype=np.int64)


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    disagreement_queue(ScoringProfile.objects.get(pk=spec["profile"]), spec["split"])


def dispute_rows(queue: dict, profile: ScoringProfile, *, attribute: str = "", level: int | None = None,
                 pair: tuple[int, int] | None = None, sort: str = "impact") -> QuerySet:
    """The queue's rows filtered by disputed attribute, current consensus level and disagreeing pair, in
    `sort` order: a queryset, so a page reads one page (slice it) and a download reads them all."""
    rows = DisputedImage.objects.filter(queue=queue["key"])
    if attribute:
        j = queue["keys"].index(attribute) if attribute in queue["keys"] else None
        if j is None:
            rows = rows.none()
        elif j < MASK_BITS:
            rows = rows.alias(hit=F("attribute_mask").bitand(1 << j)).filter(hit__gt=0)
        else:
            rows = rows.filter(id__in=[r.pk for r in rows.only("id", "disputed") if attribute in r.disputed])
    if level is not None:
        rows = rows.filter(image_id__in=ImageScore.objects.filter(profile=profile, level=level).values("image_id"))
    if pair is not None:
        wanted = sorted(pair)
        j = next((k for k, p in enumerate(queue["pairs"]) if sorted(p) == wanted), None)
        if j is None:
            rows = rows.none()
        elif j < MASK_BITS:
            rows = rows.alias(pair_hit=F("pair_mask").bitand(1 << j)).filter(pair_hit__gt=0)
        else:
            rows = rows.filter(id__in=[r.pk for r in rows.only("id", "pairs") if wanted in [sorted(p) for p in r.pairs]])
    return rows.order_by(*SORTS[sort])


def as_dicts(rows) -> list[dict]:
    """Rows as the dicts the tables take."""
    fields = ("image_id", "disputed", "n_disputed", "score_lo", "score_hi", "level_lo", "level_hi", "impact", "level_changes", "pairs")
    return [{f: getattr(r, f) for f in fields} for r in rows]


def neighbours(queue: dict, image_id: int) -> dict:
    """The previous and next image of the queue (impact order) around `image_id`, its position and the
    total: four small queries on the (queue, impact, image) index, whatever the size of the queue."""
    rows = DisputedImage.objects.filter(queue=queue["key"])
    total = queue["count"]
    me = rows.filter(image_id=image_id).values_list("impact", flat=True).first()
    first = rows.order_by(*SORTS["impact"]).values_list("image_id", flat=True).first()
    if me is None:
        return {"previous": None, "next": first, "position": None, "total": total}
    before = Q(impact__gt=me) | Q(impact=me, image_id__lt=image_id)
    after = Q(impact__lt=me) | Q(impact=me, image_id__gt=image_id)
    previous = rows.filter(before).order_by("impact", "-image_id").values_list("image_id", flat=True).first()
    following = rows.filter(after).order_by(*SORTS["impact"]).values_list("image_id", flat=True).first()
    return {"previous": previous, "next": following, "position": rows.filter(before).count() + 1, "total": total}
