"""The one way labels are written: a set of labels for (image, annotator), or many sets in bulk.

Every writer of Label rows comes through here: the labeling services (a reviewer's submission), model
results (annotate runs, `inference/execution.py`), the CPRT-Bench import; an adjudication (the final
word on one (image, attribute), which overrides the consensus and never touches a Label) through
`write_adjudication`. What a write promises:
- the label version (annotations.label_version) is bumped in the same transaction when anything changed;
- every created or changed label gets one history row (django-simple-history's HistoricalLabel: who,
  when, "+" created or "~" changed), as the image history page and docs/permissions.md promise; a label
  whose value and rationale are unchanged is not rewritten and gets none;
- `labeling=` / `submit=True`: the (image, annotator) labeling is saved as submitted (created when
  missing), with its own history row;
- `notify=True`: `labels_changed` is sent for the images once the transaction commits (a reviewer's
  submission; an annotate run and an import rescore through their own paths);
- a value other than 0, 0.5 or 1 is refused before anything is written.

Bulk speed: labels are read, inserted and updated as plain values (`executemany`), and the history
rows are copied from the label rows just written by one INSERT ... SELECT per chunk of images, so the
CPRT-Bench import writes ~150,000 labels with their history no slower than its old raw upsert wrote
them without (bench/import_export.py). The rows written by one call are those stamped with its
`updated_at`; the chunk's images and annotators bound that search.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from .. import label_version
from ..models import LABEL_VALUES, Adjudication, Label, Labeling
from ..signals import labels_changed

IMAGES_PER_STATEMENT = 400  # keeps every statement well under SQLite's limit on bound parameters


@dataclass(frozen=True)
class LabelSet:
    """What one annotator says about one image: attribute id -> (value, rationale)."""

    image_id: int
    annotator_id: int
    values: Mapping[int, tuple[float, str]]


@dataclass
class Written:
    created: int = 0
    changed: int = 0
    unchanged: int = 0


def write_labels(image_id: int, annotator_id: int, values: Mapping[int, tuple[float, str]], *, user=None,
                 labeling: Labeling | None = None, submit: bool = False, notify: bool = False) -> Written:
    """Write one annotator's labels of one image (attribute id -> (value, rationale)).

    `labeling`: the caller's Labeling of that (image, annotator), locked and with its working copy
    applied; it is saved as submitted. `submit=True` without one marks the stored labeling submitted.
    """
    with transaction.atomic(savepoint=False):  # no savepoint: a failure rolls back the caller's transaction
        written = write_label_sets([LabelSet(image_id, annotator_id, values)], user=user, notify=notify)
        if labeling is not None or submit:
            _mark_submitted(image_id, annotator_id, user, labeling)
    return written


def write_label_sets(sets: Iterable[LabelSet], *, user=None, notify: bool = False) -> Written:
    """Write many (image, annotator) label sets in one transaction; a later set for the same pair wins."""
    merged: dict[tuple[int, int], dict[int, tuple[float, str]]] = {}
    for label_set in sets:
        values = merged.setdefault((label_set.image_id, label_set.annotator_id), {})
        for attribute_id, (value, rationale) in label_set.values.items():
            value = float(value)
            if value not in LABEL_VALUES:
                raise ValueError(
                    f"Label {value!r} for image {label_set.image_id}, attribute {attribute_id} is not 0, 0.5 or 1; nothing was written."
                )
            values[attribute_id] = (value, rationale or "")
    written = Written()
    keys = list(merged)
    with transaction.atomic(savepoint=False):
        for start in range(0, len(keys), IMAGES_PER_STATEMENT):
            _write_chunk({key: merged[key] for key in keys[start : start + IMAGES_PER_STATEMENT]}, getattr(user, "pk", None), written)
        if written.created or written.changed:
            label_version.bump(annotator_id for _, annotator_id in keys)
        if notify and keys:
            image_ids = sorted({image_id for image_id, _ in keys})
            annotator_ids = sorted({annotator_id for _, annotator_id in keys})
            # robust: the labels are committed either way; a failed rescore is logged, not shown as a failed save.
            transaction.on_commit(partial(labels_changed.send, sender=Labeling, image_ids=image_ids, annotator_ids=annotator_ids), robust=True)
    return written


def _write_chunk(chunk: dict[tuple[int, int], dict[int, tuple[float, str]]], user_id: int | None, written: Written) -> None:
    quote = connection.ops.quote_name
    table, history = quote(Label._meta.db_table), quote(Label.history.model._meta.db_table)
    columns = ", ".join(quote(f.column) for f in Label._meta.concrete_fields)
    image_ids = sorted({image_id for image_id, _ in chunk})
    annotator_ids = sorted({annotator_id for _, annotator_id in chunk})
    where = f"image_id IN ({', '.join(['%s'] * len(image_ids))}) AND annotator_id IN ({', '.join(['%s'] * len(annotator_ids))})"
    params = [*image_ids, *annotator_ids]
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    stamp = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, image_id, annotator_id, attribute_id, value, rationale FROM {table} WHERE {where}{lock}", params)
        existing = {(image_id, annotator_id, attribute_id): (pk, value, rationale)
                    for pk, image_id, annotator_id, attribute_id, value, rationale in cursor.fetchall()}
        new, changed = [], []
        for (image_id, annotator_id), values in chunk.items():
            for attribute_id, (value, rationale) in values.items():
                old = existing.get((image_id, annotator_id, attribute_id))
                if old is None:
                    new.append((image_id, annotator_id, attribute_id, value, rationale, stamp, stamp))
                elif old[1] != value or old[2] != rationale:
                    changed.append((value, rationale, stamp, old[0]))
        written.created += len(new)
        written.changed += len(changed)
        written.unchanged += sum(len(values) for values in chunk.values()) - len(new) - len(changed)
        if not (new or changed):
            return
        if new:
            insert = f"{table} (image_id, annotator_id, attribute_id, value, rationale, created_at, updated_at)"
            if connection.vendor == "postgresql":
                # COPY, not one INSERT per label: an import of 2,000 VISPR images writes 42,000 labels
                # (issue 37: 4.5 of its 19 s went to the executemany).
                with cursor.cursor.copy(f"COPY {insert} FROM STDIN") as copy:
                    for row in new:
                        copy.write_row(row)
            else:
                cursor.executemany(f"INSERT INTO {insert} VALUES (%s, %s, %s, %s, %s, %s, %s)", new)
        if changed:
            cursor.executemany(f"UPDATE {table} SET value = %s, rationale = %s, updated_at = %s WHERE id = %s", changed)
        cursor.execute(
            f"INSERT INTO {history} ({columns}, history_date, history_change_reason, history_type, history_user_id) "
            f"SELECT {columns}, %s, NULL, CASE WHEN created_at = %s THEN '+' ELSE '~' END, %s FROM {table} "
            f"WHERE {where} AND updated_at = %s",
            [stamp, stamp, user_id, *params, stamp],
        )


def _mark_submitted(image_id: int, annotator_id: int, user, labeling: Labeling | None) -> Labeling:
    if labeling is None:
        labeling = Labeling.objects.select_for_update().filter(image_id=image_id, annotator_id=annotator_id).first()
        if labeling is not None and labeling.status == Labeling.STATUS_SUBMITTED:
            return labeling  # a model's labeling written again: nothing about it changes
        labeling = labeling or Labeling(image_id=image_id, annotator_id=annotator_id)
    labeling.status = Labeling.STATUS_SUBMITTED
    if labeling.submitted_at is None:
        labeling.submitted_at = timezone.now()
    labeling._history_user = user
    labeling.save()
    label_version.bump([annotator_id])
    return labeling


# --- adjudications -------------------------------------------------------------------------------


class AdjudicationConflict(Exception):
    """Another adjudicator's first decision on the same (image, attribute) committed while this one was
    being written; nothing of this one was stored. `message` says what won."""

    status = 409

    def __init__(self, winner: Adjudication):
        self.winner = winner
        self.message = (
            f"Another adjudicator ({winner.adjudicator}) decided {winner.attribute.key} of this image at the same time: "
            f"{winner.value:g}. Your decision was not saved; review theirs and set the label again if you disagree."
        )
        super().__init__(self.message)


def write_adjudication(user, image, attribute, value: float, note: str) -> tuple[Adjudication, dict | None]:
    """Set the final label of one (image, attribute), with a history row naming `user`; returns the row and
    what it held before (None for a first decision). Call inside a transaction.

    A later decision replaces an earlier one. Two first decisions at the same instant both find no row
    to lock; the unique constraint lets one insert win and the other raises AdjudicationConflict.
    """
    if value not in LABEL_VALUES:
        raise ValueError(f"{value!r} is not a valid label (0, 0.5 or 1).")
    adjudication = Adjudication.objects.select_for_update().filter(image=image, attribute=attribute).first()
    old = None if adjudication is None else {"value": adjudication.value, "note": adjudication.note}
    if adjudication is None:
        adjudication = Adjudication(image=image, attribute=attribute)
    adjudication.value, adjudication.note, adjudication.adjudicator = value, note, user
    adjudication._history_user = user
    try:
        with transaction.atomic():  # a savepoint: the losing insert must not spoil the transaction
            adjudication.save()
    except IntegrityError:
        if old is not None:
            raise
        winner = Adjudication.objects.select_related("adjudicator", "attribute").get(image=image, attribute=attribute)
        raise AdjudicationConflict(winner) from None
    label_version.bump([label_version.ADJUDICATION_WRITES])
    return adjudication, old
