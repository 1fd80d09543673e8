"""Adjudication: an adjudicator's final label of one (image, attribute), audited, then the image rescored.

The row is written by the one label-writing API (`annotations.services.labels.write_adjudication`,
with its history row); this module adds the audit event, the rescore and the image's row of every current
disagreement queue (scoring.services.disagreements.follow_adjudication), all in the write's transaction.
"""
from __future__ import annotations

from django.db import transaction

from annotations.models import Adjudication, Attribute, Image, TaxonomyVersion
from annotations.services.labels import AdjudicationConflict, write_adjudication
from core.audit import audit

from .disagreements import follow_adjudication
from .scores import rescore_image

__all__ = ["AdjudicationConflict", "active_attributes", "adjudicate"]


def active_attributes() -> dict[str, Attribute]:
    tv = TaxonomyVersion.objects.order_by("-created_at", "-id").first()
    return {a.key: a for a in Attribute.objects.filter(taxonomy=tv)}

def adjudicate(user, image: Image, attribute: Attribute, value: float, note: str) -> Adjudication:
    """Set the final label of one (image, attribute): never touches Labels; history + audit; rescore; the
    image's row of the disagreement queues that were current.

    A later decision replaces an earlier one; two first decisions at the same instant: one wins, the other
    raises AdjudicationConflict (see `write_adjudication`).
    """
    with transaction.atomic():
        adjudication, old = write_adjudication(user, image, attribute, value, note)
        audit(user, "adjudicate", adjudication, image_id=image.pk, vispr_id=image.vispr_id, attribute=attribute.key,
              old=old, new={"value": value, "note": note})
        rescore_image(image.pk)
        follow_adjudication(image.pk)
    return adjudication
