"""An image's history page: every label change, labeling status and flag change, and adjudication."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..models import Adjudication, Image, Label, Labeling




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
