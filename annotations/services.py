"""The labeling workflow: queue claims, drafts, submissions, skips, progress, page data, history.

Views stay thin and call these functions; the rules live here so that tests and the load bench go
through one code path:
- each image needs `settings.CPRT_LABELINGS_PER_IMAGE` human labelings; a draft holds a slot, a
  skipped labeling gives it back; claims lock the image row so two reviewers cannot take one slot;
- blind labeling (annotations/blind.py): others' labels are shown only after the reviewer has
  submitted, and a submitted labeling is frozen;
- optimistic versions: every save names the version it was loaded with, a stale one is refused;
- an image with an Adjudication is read-only for its labelings.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from core.roles import role_of

from core.audit import audit

from . import taxonomy
from .signals import labels_changed
from .history import save_with_coalesced_history
from .models import Adjudication, Annotator, Image, Label, Labeling
from core.models import Profile

VALUE_NAMES = {0.0: "No", 0.5: "Unsure", 1.0: "Yes"}
CLAIM_ATTEMPTS = 50


class LabelingError(Exception):
    """A refused labeling action; `message` says why, `status` is the HTTP status a view should use."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class StaleVersion(LabelingError):
    status = 409

    def __init__(self, loaded: int, current: int):
        super().__init__(
            f"This labeling was saved elsewhere after you loaded it (you loaded version {loaded}, "
            f"it is now version {current}), perhaps in another tab. Nothing was overwritten: reload the page "
            "to see the current answers, then make your change again."
        )
        self.loaded, self.current = loaded, current


class LabelingLocked(LabelingError):
    status = 403


class MissingAnswers(LabelingError):
    def __init__(self, missing: list[str]):
        super().__init__(f"Answer every question before submitting. Missing ({len(missing)}): {', '.join(missing)}.")
        self.missing = missing


def labelings_per_image() -> int:
    return settings.CPRT_LABELINGS_PER_IMAGE


# --- the queue -----------------------------------------------------------------------------------


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


# --- editing -------------------------------------------------------------------------------------


def is_locked(labeling: Labeling) -> bool:
    """Read-only once an adjudicator has decided on any attribute of the image."""
    return Adjudication.objects.filter(image_id=labeling.image_id).exists()


def is_editable(labeling: Labeling) -> bool:
    """Only a draft on an image no adjudicator has decided on: submitted labelings are frozen (blind rule)."""
    return labeling.status == Labeling.STATUS_DRAFT and not is_locked(labeling)


def _lock_for_edit(labeling: Labeling, version: int) -> Labeling:
    current = Labeling.objects.select_for_update().get(pk=labeling.pk)
    if current.status == Labeling.STATUS_SKIPPED:
        raise LabelingError("You skipped this image; a skipped labeling cannot be changed.")
    if is_locked(current):
        raise LabelingLocked("An adjudicator has decided on this image, so its labelings are read-only now.")
    if current.status == Labeling.STATUS_SUBMITTED:
        # Blind rule (annotations/blind.py): after submitting, the reviewer may see the others' labels,
        # so their own must not change any more: a correction goes through an adjudicator.
        raise LabelingLocked(
            "You submitted this labeling, so it is final: other annotators' labels are shown to you now, and an "
            "answer changed after seeing them would no longer be independent. Ask an adjudicator to correct it."
        )
    if current.version != version:
        raise StaleVersion(version, current.version)
    return current


def _apply_working_copy(current: Labeling, user, values: dict, rationales: dict, note: str, flag: str) -> None:
    old_flag = current.flag
    current.draft_values = {k: float(v) for k, v in values.items()}
    current.draft_rationales = {k: r for k, r in rationales.items() if r}
    current.note = note
    current.flag = flag
    current.version += 1
    current._history_user = user
    if flag != old_flag:
        audit(user, "labeling.flag", current, image_id=current.image_id, old=old_flag, new=flag)


@transaction.atomic
def save_draft(labeling: Labeling, user, *, version: int, values: dict, rationales: dict, note: str = "", flag: str = "") -> Labeling:
    """Replace the working copy (answers, rationales, note, flag) with what the form holds now."""
    current = _lock_for_edit(labeling, version)
    _apply_working_copy(current, user, values, rationales, note, flag)
    save_with_coalesced_history(current, user)  # one history row per burst of autosaves
    return current


@transaction.atomic
def submit(labeling: Labeling, user, *, version: int, values: dict, rationales: dict, note: str = "", flag: str = "") -> Labeling:
    """Write every answer as a Label (history rows record each change and who made it), then rescore on commit."""
    current = _lock_for_edit(labeling, version)
    keys = taxonomy.active().keys
    missing = [k for k in keys if k not in values]
    if missing:
        raise MissingAnswers(missing)
    attr_ids = taxonomy.attribute_ids()
    existing = {label.attribute_id: label for label in Label.objects.filter(image_id=current.image_id, annotator_id=current.annotator_id)}
    now = timezone.now()
    to_create, to_update = [], []
    for key in keys:
        value, rationale = float(values[key]), rationales.get(key, "")
        label = existing.get(attr_ids[key])
        if label is None:
            to_create.append(
                Label(image_id=current.image_id, annotator_id=current.annotator_id, attribute_id=attr_ids[key], value=value, rationale=rationale, created_at=now, updated_at=now)
            )
        elif label.value != value or label.rationale != rationale:
            label.value, label.rationale, label.updated_at = value, rationale, now
            to_update.append(label)
    if to_create:
        bulk_create_with_history(to_create, Label, default_user=user, default_date=now)
    if to_update:
        bulk_update_with_history(to_update, Label, ["value", "rationale", "updated_at"], default_user=user, default_date=now)
    first_submission = current.status != Labeling.STATUS_SUBMITTED
    _apply_working_copy(current, user, values, rationales, note, flag)
    current.status = Labeling.STATUS_SUBMITTED
    if current.submitted_at is None:
        current.submitted_at = now
    current.save()
    if first_submission or to_create or to_update:
        audit(user, "labeling.submit", current, image_id=current.image_id, created=len(to_create), changed=len(to_update))
    # robust: the labels are committed either way; a failed rescore is logged, not shown as a failed save.
    transaction.on_commit(partial(labels_changed.send, sender=Labeling, image_ids=[current.image_id]), robust=True)
    return current


@transaction.atomic
def skip(labeling: Labeling, user) -> Labeling:
    """Give a draft's slot back; the image is not offered to this reviewer again."""
    current = Labeling.objects.select_for_update().get(pk=labeling.pk)
    if current.status != Labeling.STATUS_DRAFT:
        raise LabelingError(f"Only a draft can be skipped; this labeling is {current.status}.")
    current.status = Labeling.STATUS_SKIPPED
    current.version += 1
    current._history_user = user
    current.save()
    audit(user, "labeling.skip", current, image_id=current.image_id)
    return current


@transaction.atomic
def unskip(labeling: Labeling, user) -> Labeling:
    """Take a skipped image back as a draft (undo a skip, or reopen it from the skipped list), answers kept,
    if the image still has a free slot and no adjudicator has decided on it."""
    current = Labeling.objects.select_for_update().get(pk=labeling.pk)
    if current.status != Labeling.STATUS_SKIPPED:
        raise LabelingError(f"Only a skipped image can be taken back; this labeling is {current.status}.")
    Image.objects.select_for_update().filter(pk=current.image_id).first()  # serialise with claims of the same image
    if is_locked(current):
        raise LabelingLocked("An adjudicator has decided on this image, so it cannot be labeled any more.")
    if _slots_taken(current.image_id) >= labelings_per_image():
        raise LabelingError("Other reviewers have taken every slot of this image since you skipped it; it needs no more labels.")
    current.status = Labeling.STATUS_DRAFT
    current.version += 1
    current._history_user = user
    current.save()
    audit(user, "labeling.unskip", current, image_id=current.image_id)
    return current


def stay_after_submit(user) -> bool:
    profile = getattr(user, "profile", None)
    return bool(profile is not None and profile.stay_after_submit)


# --- what the labeling page shows ----------------------------------------------------------------


@dataclass
class Row:
    key: str
    level: int
    question: str
    value: float | None
    rationale: str
    suggestions: list = field(default_factory=list)  # [(annotator label, value name, rationale)]
    others: list = field(default_factory=list)  # [(annotator label, value name)]


@dataclass
class LevelGroup:
    number: int
    name: str
    rows: list


def blur_default(user) -> bool:
    profile = getattr(user, "profile", None)
    return True if profile is None else profile.blur_images_by_default


def _annotator_label(annotator: Annotator, human_numbers: dict) -> str:
    if annotator.kind == Annotator.KIND_MODEL:
        return f"{annotator.provider}/{annotator.model_name} · prompt {annotator.prompt_version}"
    if annotator.kind == Annotator.KIND_HUMAN:
        # Other reviewers stay anonymous on the labeling page; the history page names them for staff.
        number = human_numbers.setdefault(annotator.pk, len(human_numbers) + 1)
        return f"reviewer #{number}"
    return annotator.name


def page_rows(labeling: Labeling, values: dict | None = None, rationales: dict | None = None) -> tuple[list[LevelGroup], dict]:
    """Rows grouped by level, filled from `values` (posted data) or the labeling's working copy.

    Blind by default: model suggestions only when the image's batch turns them on and the labeling
    is not submitted; every other annotator's labels only after submission.
    """
    tax = taxonomy.active()
    values = labeling.draft_values if values is None else values
    rationales = labeling.draft_rationales if rationales is None else rationales
    rows = {a.key: Row(a.key, a.level, a.question, _as_value(values.get(a.key)), rationales.get(a.key, "")) for a in tax.attributes}
    info = {"suggestions_from": [], "compared_with": []}
    submitted = labeling.status == Labeling.STATUS_SUBMITTED
    batch = labeling.image.batch
    if not submitted and batch is not None and batch.show_model_suggestions:
        chosen = list(batch.suggestion_annotators.values_list("pk", flat=True))
        labels = Label.objects.filter(image_id=labeling.image_id, annotator__kind=Annotator.KIND_MODEL)
        if chosen:
            labels = labels.filter(annotator_id__in=chosen)
        names = {}
        for label in labels.select_related("annotator", "attribute").order_by("annotator__name"):
            name = _annotator_label(label.annotator, {})
            names[name] = True
            if label.attribute.key in rows:
                rows[label.attribute.key].suggestions.append((name, VALUE_NAMES.get(label.value, label.value), label.rationale))
        info["suggestions_from"] = list(names)
    if submitted:
        humans: dict = {}
        names = {}
        for label in (
            Label.objects.filter(image_id=labeling.image_id)
            .select_related("annotator", "attribute")
            .order_by("annotator__kind", "annotator_id")
        ):
            if label.annotator_id == labeling.annotator_id:
                continue
            name = _annotator_label(label.annotator, humans)
            names[name] = True
            if label.attribute.key in rows:
                rows[label.attribute.key].others.append((name, VALUE_NAMES.get(label.value, label.value)))
        info["compared_with"] = list(names)
    groups = [LevelGroup(n, tax.level_names.get(n, f"Level {n}"), [r for r in rows.values() if r.level == n]) for n in (1, 2, 3, 4)]
    return groups, info


def _as_value(raw) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None


# --- history and preferences ---------------------------------------------------------------------


@dataclass
class LabelChange:
    when: dt.datetime
    user: str
    annotator: str
    attribute: str
    kind: str  # created / changed / deleted
    old_value: float | None
    new_value: float | None
    old_rationale: str
    new_rationale: str


def label_history(image: Image) -> list[LabelChange]:
    """Every recorded change of the image's labels, newest first, with the value before and after."""
    rows = (
        Label.history.filter(image_id=image.pk)
        .select_related("history_user", "annotator", "attribute")
        .order_by("history_date", "history_id")
    )
    last: dict = {}
    changes = []
    kinds = {"+": "created", "~": "changed", "-": "deleted"}
    for row in rows:
        slot = (row.annotator_id, row.attribute_id)
        old_value, old_rationale = last.get(slot, (None, ""))
        if row.history_type == "-":
            last.pop(slot, None)
            new_value, new_rationale = None, ""
        else:
            last[slot] = (row.value, row.rationale)
            new_value, new_rationale = row.value, row.rationale
        changes.append(
            LabelChange(
                when=row.history_date,
                user=row.history_user.username if row.history_user else "(system)",
                annotator=row.annotator.name if row.annotator else f"annotator {row.annotator_id}",
                attribute=row.attribute.key if row.attribute else f"attribute {row.attribute_id}",
                kind=kinds.get(row.history_type, row.history_type),
                old_value=old_value,
                new_value=new_value,
                old_rationale=old_rationale,
                new_rationale=new_rationale,
            )
        )
    changes.reverse()
    return changes


def labeling_events(image: Image) -> list:
    """Status and flag changes of the image's labelings (draft autosaves that change neither are left out)."""
    events, last = [], {}
    for row in Labeling.history.filter(image_id=image.pk).select_related("history_user", "annotator").order_by("history_date", "history_id"):
        state = (row.status, row.flag)
        if last.get(row.id) != state:
            events.append(
                {
                    "when": row.history_date,
                    "user": row.history_user.username if row.history_user else "(system)",
                    "annotator": row.annotator.name if row.annotator else "",
                    "status": row.status,
                    "flag": row.flag,
                    "version": row.version,
                }
            )
        last[row.id] = state
    events.reverse()
    return events


def adjudication_history(image: Image) -> list[dict]:
    """Every recorded adjudication of the image (set or changed), newest first, with the value before and after."""
    rows = Adjudication.history.filter(image_id=image.pk).select_related("history_user", "attribute").order_by("history_date", "history_id")
    last: dict = {}
    out = []
    kinds = {"+": "set", "~": "changed", "-": "removed"}
    for row in rows:
        old = last.get(row.attribute_id)
        last[row.attribute_id] = None if row.history_type == "-" else row.value
        out.append({"when": row.history_date, "user": row.history_user.username if row.history_user else "(system)",
                    "attribute": row.attribute.key if row.attribute else f"attribute {row.attribute_id}",
                    "kind": kinds.get(row.history_type, row.history_type), "old_value": old,
                    "new_value": None if row.history_type == "-" else row.value, "note": row.note})
    out.reverse()
    return out


def profile_for(user) -> Profile:
    """The user's Profile; superusers created without one get an admin profile on first use."""
    profile = getattr(user, "profile", None)
    if profile is None:
        profile, _ = Profile.objects.get_or_create(user=user, defaults={"role": role_of(user) or "reviewer"})
    return profile
