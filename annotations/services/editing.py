"""Editing a labeling: drafts, submission, skips; the rules that refuse a change.

- blind labeling (annotations/blind.py): a submitted labeling is frozen;
- optimistic versions: every save names the version it was loaded with, a stale one is refused;
- an image with an Adjudication is read-only for its labelings.
Submitted answers become Labels through the one label-writing API (`services/labels.py`).
"""
from __future__ import annotations

from django.db import transaction

from core import metrics
from core.audit import audit

from .. import hooks, taxonomy
from ..history import save_with_coalesced_history
from ..models import Adjudication, Image, Labeling
from . import page
from .labels import write_labels
from .labeling_queue import _slots_taken, labelings_per_image


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


def is_locked(labeling: Labeling) -> bool:
    """Read-only once an adjudicator has decided on any attribute of the image."""
    return Adjudication.objects.filter(image_id=labeling.image_id).exists()


def _lock_for_edit(labeling: Labeling, version: int) -> Labeling:
    # The image and its batch come along (suggestions in view are recorded from them); only the labeling row is locked.
    current = Labeling.objects.select_for_update(of=("self",)).select_related("image__batch").get(pk=labeling.pk)
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


def _record_suggestions(current: Labeling) -> None:
    """Assisted labels: when model suggestions are in view of this draft (page.suggestions_in_view, what the page and
    the API show with it), the labeling is marked assisted, with the models named and each attribute's suggestion
    kept. Never unset: answers given once with suggestions in view stay assisted even if the batch turns them off."""
    names, shown = page.suggestions_in_view(current)
    if not names:
        return
    current.assisted = True
    current.suggestions_seen = sorted(set(current.suggestions_seen or []) | set(names))
    current.suggested_values = {**(current.suggested_values or {}), **shown}


def _apply_working_copy(current: Labeling, user, values: dict, rationales: dict, note: str, flag: str) -> None:
    _record_suggestions(current)
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
    metrics.labeling_save("draft")
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
    first_submission = current.status != Labeling.STATUS_SUBMITTED
    _apply_working_copy(current, user, values, rationales, note, flag)
    written = write_labels(
        current.image_id, current.annotator_id, {attr_ids[key]: (float(values[key]), rationales.get(key, "")) for key in keys},
        user=user, labeling=current, notify=True,
    )
    # The label-version writes of this submission: the labels' when any changed, and the labeling's (always).
    hooks.labels_submitted(current.image_id, 1 + bool(written.created or written.changed))
    if first_submission or written.created or written.changed:
        audit(user, "labeling.submit", current, image_id=current.image_id, created=written.created, changed=written.changed)
    metrics.labeling_save("submit")
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
