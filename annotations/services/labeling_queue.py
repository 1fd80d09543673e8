"""The labeling queue: which images a reviewer may take, claims, the reviewer's counters, idle drafts.

Each image needs `settings.CPRT_LABELINGS_PER_IMAGE` human labelings; a draft holds a slot, a skipped
labeling gives it back; claims lock the image row so two reviewers cannot take one slot.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from core.audit import audit

from ..models import Adjudication, Annotator, Image, Label, Labeling

CLAIM_ATTEMPTS = 50


def labelings_per_image() -> int:
    return settings.CPRT_LABELINGS_PER_IMAGE




def queue_for(annotator: Annotator) -> QuerySet[Image]:
    """Images this annotator may still take: a stored file, not unsuitable, not adjudicated, a free slot, not theirs.

    Written as NOT IN over small aggregated subqueries (PostgreSQL hashes them once) rather than a
    per-image correlated count, so counting the queue and claiming from it stay fast at 10^5 images.
    """
    slots = Labeling.objects.filter(annotator__kind=Annotator.KIND_HUMAN).exclude(status=Labeling.STATUS_SKIPPED)
    full = slots.order_by().values("image").annotate(n=Count("pk")).filter(n__gte=labelings_per_image()).values("image")
    return (
        Image.objects.filter(unsuitable=False)
        .exclude(file="")
        .exclude(pk__in=full)
        .exclude(pk__in=Labeling.objects.filter(annotator=annotator).values("image"))
        .exclude(pk__in=Adjudication.objects.values("image"))
    )


def _slots_taken(image_id: int) -> int:
    return (
        Labeling.objects.filter(image_id=image_id, annotator__kind=Annotator.KIND_HUMAN)
        .exclude(status=Labeling.STATUS_SKIPPED)
        .count()
    )


def _open_drafts(annotator: Annotator) -> QuerySet[Labeling]:
    return (
        Labeling.objects.filter(annotator=annotator, status=Labeling.STATUS_DRAFT, image__unsuitable=False)
        .filter(~Exists(Adjudication.objects.filter(image=OuterRef("image"))))
        .order_by("created_at", "pk")
    )


def claim_next(user) -> Labeling | None:
    """The user's oldest open draft, or a new draft on an image that still needs labels; None when none is left.

    Claims of one reviewer are serialised on their annotator row, and the open draft is looked up
    again under that lock, so parallel requests (several tabs) get the same draft. The claim locks
    the chosen image row (PostgreSQL: FOR UPDATE SKIP LOCKED, so concurrent claims
    spread over different images; SQLite: the IMMEDIATE transaction serialises writers) and counts the
    image's slots again under the lock, because the queue query may have read a snapshot older than
    a claim that committed while it ran.
    """
    annotator = Annotator.for_user(user)
    draft = _open_drafts(annotator).first()
    if draft is not None:
        return draft
    tried: set[int] = set()
    for _ in range(CLAIM_ATTEMPTS):
        image = None
        try:
            with transaction.atomic():
                # One claim at a time per reviewer (their annotator row is the lock): parallel "next
                # image" requests from several tabs must resume one draft, not open one each.
                Annotator.objects.select_for_update().filter(pk=annotator.pk).first()
                draft = _open_drafts(annotator).first()
                if draft is not None:
                    return draft
                # Lowest id first: reviewers fill an image's slots before the next image is started.
                candidates = queue_for(annotator).exclude(pk__in=tried).order_by("pk")
                image = candidates.select_for_update(skip_locked=True, of=("self",)).first()
                if image is None:
                    # Every candidate may be locked by other claims in flight: wait for one instead of
                    # telling the reviewer the queue is empty.
                    image = candidates.select_for_update(of=("self",)).first()
                if image is None:
                    return None
                if _slots_taken(image.pk) >= labelings_per_image():
                    tried.add(image.pk)
                    continue
                labeling = Labeling(image=image, annotator=annotator)
                labeling._history_user = user
                labeling.save()
                return labeling
        except IntegrityError:
            # The same user claimed this image from another tab at the same moment.
            if image is not None:
                tried.add(image.pk)
    return None


@dataclass
class Progress:
    done_today: int
    done_total: int
    left_in_queue: int
    open_drafts: int
    left_max_age_s: int = 0  # how old the "left in the queue" count may be (0: counted now)


def progress(user, fresh: bool = True) -> Progress:
    """The reviewer's counters. `fresh=False` (the labeling page) takes "left in the queue" from a
    count at most CPRT_QUEUE_COUNT_TTL_S old: counting the queue reads every image, and this page is
    loaded once per labeled image."""
    annotator = Annotator.for_user(user)
    start_of_today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    counts = Labeling.objects.filter(annotator=annotator).aggregate(
        total=Count("pk", filter=Q(status=Labeling.STATUS_SUBMITTED)),
        today=Count("pk", filter=Q(status=Labeling.STATUS_SUBMITTED, submitted_at__gte=start_of_today)),
        drafts=Count("pk", filter=Q(status=Labeling.STATUS_DRAFT)),
    )
    return Progress(
        done_today=counts["today"],
        done_total=counts["total"],
        left_in_queue=_queue_count(annotator, fresh),
        open_drafts=counts["drafts"],
        left_max_age_s=0 if fresh else settings.CPRT_QUEUE_COUNT_TTL_S,
    )


def _queue_count(annotator: Annotator, fresh: bool) -> int:
    key = f"cprt:queue-left:{annotator.pk}"
    count = None if fresh else cache.get(key)
    if count is None:
        count = queue_for(annotator).count()
        cache.set(key, count, settings.CPRT_QUEUE_COUNT_TTL_S)
    return count


def release_idle_drafts(idle_hours: float | None = None, actor=None) -> list[int]:
    """Give back the slots of drafts that hold no answer and were not touched for `idle_hours`
    (default CPRT_DRAFT_IDLE_HOURS): a reviewer who opened an image and left must not block it for
    the others. Drafts with answers are never touched: that is work in progress. Returns the image ids."""
    hours = settings.CPRT_DRAFT_IDLE_HOURS if idle_hours is None else idle_hours
    cutoff = timezone.now() - dt.timedelta(hours=hours)
    idle = Labeling.objects.filter(
        status=Labeling.STATUS_DRAFT, draft_values={}, updated_at__lt=cutoff, annotator__kind=Annotator.KIND_HUMAN
    ).filter(~Exists(Label.objects.filter(annotator=OuterRef("annotator"), image=OuterRef("image"))))
    with transaction.atomic():
        rows = list(idle.select_for_update().values_list("pk", "image_id"))
        if not rows:
            return []
        for labeling in Labeling.objects.filter(pk__in=[pk for pk, _ in rows]):
            labeling._history_user = actor
            labeling.delete()  # the history table keeps the record
        audit(actor, "labeling.release_idle", None, labeling_ids=[pk for pk, _ in rows], idle_hours=hours)
    return [image_id for _, image_id in rows]
