"""The label version: an exact integer that changes with every committed write of what the agreement
and disagreement pages read (labels, submitted labelings, adjudications), so they key their caches on one
read of a tiny table instead of an aggregate over every label (issue 29).

`bump(streams)` is called inside the writing transaction by every write path: the label-writing API
(annotations.services.labels: reviewers' submissions, model results, the VISPR and CPRT-Bench bulk
imports), the CPRT-Bench COPY import (scoring.cprt_bench.copying), adjudications, and the deletion of
images, annotators, labelings or adjudications (receivers below: deleting through the admin cascades to
labels), and the saving of an annotator (its name and kind are shown and decide which labels count) or
of an image's split in the admin. A stream is an annotator's id, 0 for deletions and annotator edits,
ADJUDICATION_WRITES (-1) for adjudications (models.LabelWrites).

[decision] (issue 37) Adjudications count on a stream of their own, so that `current(adjudications=False)`
is the version of the labels alone: the agreement study reads no adjudication, and its figures stay current
when an adjudicator decides an attribute (the disagreement queue, which reads them, keys on every stream).
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Sum
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .models import Adjudication, Annotator, Image, Labeling, LabelWrites

ADJUDICATIONS = 0  # the stream of deletions and annotator edits (adjudications were counted here before issue 37)
ADJUDICATION_WRITES = -1  # the stream of adjudications written or deleted


def bump(streams: Iterable[int]) -> None:
    """Count one write on each stream, in the caller's transaction (an upsert: the row is made on first use)."""
    table = connection.ops.quote_name(LabelWrites._meta.db_table)
    with connection.cursor() as cursor:
        for stream in sorted(set(streams)):  # a fixed order: two writers of the same streams cannot deadlock
            cursor.execute(f"INSERT INTO {table} (stream, writes) VALUES (%s, 1) "
                           f"ON CONFLICT (stream) DO UPDATE SET writes = {table}.writes + 1", [stream])


def current(adjudications: bool = True) -> int:
    """The label version: the sum of every stream's writes (0 before the first write); without the
    adjudications' stream when `adjudications` is False (the version of what the agreement study reads)."""
    rows = LabelWrites.objects.all() if adjudications else LabelWrites.objects.exclude(stream=ADJUDICATION_WRITES)
    return rows.aggregate(total=Sum("writes"))["total"] or 0


@receiver(post_delete, sender=Image, dispatch_uid="label-version-image")
@receiver(post_delete, sender=Annotator, dispatch_uid="label-version-annotator")
@receiver(post_delete, sender=Labeling, dispatch_uid="label-version-labeling")
def _deleted(sender, **kwargs) -> None:
    """A deleted image or annotator takes its labels with it (cascade), a labeling its labels' standing."""
    bump([ADJUDICATIONS])


@receiver(post_delete, sender=Adjudication, dispatch_uid="label-version-adjudication")
def _adjudication_deleted(sender, **kwargs) -> None:
    bump([ADJUDICATION_WRITES])


@receiver(post_save, sender=Annotator, dispatch_uid="label-version-annotator-saved")
def _annotator_saved(sender, **kwargs) -> None:
    """An annotator's name and kind are part of what the pages show and count."""
    bump([ADJUDICATIONS])
