"""The review page of one image (every annotator's labels, the consensus, the final label an
adjudicator sets per attribute) and its previous/next through the disagreement queue."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_POST

from annotations.models import Adjudication
from core.roles import STAFF_ROLES, require_role
from inference import provenance

from . import queries
from .services import adjudication
from .services import disagreements as dispute_queue
from .access import get_image_for_review
from .forms import AdjudicationForm
from .models import DisputedImage, ImageScore, ScoringProfile

QUEUE_FROZEN_MAX = 5000  # images of the frozen order kept in the session


def _blur(request) -> bool:
    profile = getattr(request.user, "profile", None)
    return True if profile is None else profile.blur_images_by_default


def _columns(annotators: list[str], kinds: dict, assisted: dict) -> list[tuple[str, str, str, dict | None]]:
    """(name, kind, provenance, assisted) per column: a model annotator's provenance badge says demo or
    stand-in; a human's assisted record says which suggestions were in view."""
    models = [n for n in annotators if kinds[n] == "model"]
    found = provenance.of_annotators(models) if models else {}
    return [(n, kinds[n], found.get(n, "real"), assisted.get(n)) for n in annotators]


def _review_context(request, image, form=None, neighbours=True) -> dict:
    """The review page's context. A refused POST passes neighbours=False: the disagreement queue behind
    previous/next is a stored computation, and a refused request must change nothing."""
    profile = ScoringProfile.active()
    attributes = adjudication.active_attributes()
    labels = queries.image_labels(image)
    annotators = []
    for row in labels:
        if row["annotator"] not in annotators:
            annotators.append(row["annotator"])
    assisted = queries.assisted_labelings(image)  # annotator name -> {"from": [...], "suggested": {key: value}}
    for row in labels:
        shown = assisted.get(row["annotator"], {}).get("suggested", {})
        row["as_suggested"] = row["key"] in shown and float(shown[row["key"]]) == float(row["value"])
    by = {(r["annotator"], r["key"]): r for r in labels}
    kinds = {r["annotator"]: r["kind"] for r in labels}
    adjudications = {a.attribute.key: a for a in Adjudication.objects.filter(image=image).select_related("attribute", "adjudicator")}
    score = ImageScore.objects.filter(image=image, profile=profile).first()
    rows = []
    for key, attribute in sorted(attributes.items(), key=lambda kv: kv[1].order):
        cells = [by.get((name, key)) for name in annotators]
        binaries = {1 if c["value"] == 1 else 0 for c in cells if c}
        rows.append({
            "key": key, "level": attribute.level, "question": attribute.question, "cells": cells,
            "disputed": len(binaries) > 1, "consensus": None if score is None else score.binary_labels.get(key),
            "adjudication": adjudications.get(key),
            # What "Set" writes unless changed: the current final label (adjudication, else consensus), never a silent 0.
            "default": _label_text(adjudications[key].value) if key in adjudications
            else ("" if score is None or score.binary_labels.get(key) is None else str(score.binary_labels[key])),
        })
    return {
        "image": image, "profile": profile, "score": score, "annotators": _columns(annotators, kinds, assisted), "rows": rows,
        "blur": _blur(request), "form": form or AdjudicationForm(attribute_keys=attributes.keys()),
        "label_choices": [("0", "0"), ("0.5", "0.5"), ("1", "1")],
        "neighbours": _disputed_neighbours(request, profile, image.pk) if neighbours else None,
    }


def _label_text(value: float) -> str:
    return {0.0: "0", 0.5: "0.5", 1.0: "1"}.get(value, str(value))


QUEUE_SESSION_KEY = "adjudication_queue"


def entered_order(profile) -> list[int]:
    """The disagreement queue's image ids in impact order, as of now (one query on the queue's index)."""
    queue = dispute_queue.disagreement_queue(profile)
    rows = DisputedImage.objects.filter(queue=queue["key"]).order_by(*dispute_queue.SORTS["impact"])
    return list(rows.values_list("image_id", flat=True)[:QUEUE_FROZEN_MAX])


def _disputed_neighbours(request, profile, image_id: int) -> dict:
    """The previous and next image of the disagreement queue (impact order) around this one, in the
    queue as it was ordered when the adjudicator entered it: adjudicating moves an image within the live
    queue, and following the live order after *Set* would skip the images that were above it. The order
    is frozen in the session per profile, and taken afresh on ?queue=refresh or for an image not in it."""
    frozen = request.session.get(QUEUE_SESSION_KEY) or {}
    ids = frozen.get("ids") if frozen.get("profile") == profile.pk else None
    refreshed = ids is None or image_id not in ids or request.GET.get("queue") == "refresh"
    if refreshed:
        fresh = entered_order(profile)
        if fresh != ids or request.GET.get("queue") == "refresh":  # an image past the stored order's end changes nothing
            ids = fresh
            frozen = {"profile": profile.pk, "ids": ids, "at": timezone.now().isoformat(timespec="seconds")}
            request.session[QUEUE_SESSION_KEY] = frozen
    if image_id in ids:
        i = ids.index(image_id)
        prev_id, next_id = (ids[i - 1] if i > 0 else None), (ids[i + 1] if i + 1 < len(ids) else None)
    else:
        prev_id, next_id = None, (ids[0] if ids else None)
    return {"previous": prev_id, "next": next_id, "position": ids.index(image_id) + 1 if image_id in ids else None,
            "total": len(ids), "frozen_at": parse_datetime(frozen["at"]), "refreshed": refreshed}


@require_role(*STAFF_ROLES)
@require_GET
def review(request, image_id: int):
    image = get_image_for_review(request.user, image_id)
    return render(request, "scoring/review.html", _review_context(request, image))


@require_role(*STAFF_ROLES)
@require_POST
def adjudicate(request, image_id: int):
    image = get_image_for_review(request.user, image_id)
    attributes = adjudication.active_attributes()
    form = AdjudicationForm(request.POST, attribute_keys=attributes.keys())
    if not form.is_valid():
        return render(request, "scoring/review.html", _review_context(request, image, form, neighbours=False), status=400)
    c = form.cleaned_data
    try:
        adjudication.adjudicate(request.user, image, attributes[c["attribute"]], c["value"], c["note"])
    except adjudication.AdjudicationConflict as exc:
        messages.error(request, exc.message)
        return render(request, "scoring/review.html", _review_context(request, image, neighbours=False), status=exc.status)
    messages.success(request, f"{c['attribute']} of {image.vispr_id} set to {c['value']:g}; score updated.")
    return redirect("scoring:review", image_id=image.pk)


