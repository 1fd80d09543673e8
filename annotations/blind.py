"""The blind-labeling rule, in one place.

Before a reviewer has submitted their own labeling of an image, nothing derived from other
annotators' labels of that image reaches them: no consensus level, score, counts or binary labels,
no filtering or ordering by them, no other annotator's label (model suggestions only where the
image's batch turns them on, see services/page.py `page_rows`). Adjudicators and admins see everything.

And once a reviewer has submitted (and so may see the others' labels), their labeling is frozen:
`services/editing.py` `_lock_for_edit` refuses every change to a submitted labeling; a correction goes through
an adjudicator. docs/permissions.md states the rule; tests/cross/test_permissions.py checks every page and
API response a reviewer can reach against it (the "blind" column).

Every page, partial, API serializer, filter and download that shows a consensus-derived value asks
one of these functions; nothing else decides.
"""
from __future__ import annotations

from django.db.models import Q

from core.roles import STAFF_ROLES, role_of

from .models import Labeling


def sees_everything(user) -> bool:
    """Adjudicators and admins are not blind: they judge the consensus."""
    return role_of(user) in STAFF_ROLES


def _submitted(user):
    return Labeling.objects.filter(annotator__user=user, status=Labeling.STATUS_SUBMITTED)


def may_see_consensus(user, image) -> bool:
    """May `user` see anything derived from other annotators' labels of `image` (an Image or its id)?"""
    if sees_everything(user):
        return True
    if not getattr(user, "is_authenticated", False):
        return False
    image_id = getattr(image, "pk", image)
    return _submitted(user).filter(image_id=image_id).exists()


def consensus_visible_ids(user, image_ids) -> set[int] | None:
    """Of `image_ids`, those whose consensus `user` may see; None means all of them (staff)."""
    if sees_everything(user):
        return None
    if not getattr(user, "is_authenticated", False):
        return set()
    return set(_submitted(user).filter(image_id__in=list(image_ids)).values_list("image_id", flat=True))


def consensus_filter(user, prefix: str = "") -> Q:
    """A Q over images (or over rows reaching an image through `prefix`, e.g. "image__") that keeps only
    the images whose consensus `user` may see. Apply it before any filter or ordering by consensus."""
    if sees_everything(user):
        return Q()
    if not getattr(user, "is_authenticated", False):
        return Q(pk__in=[])
    return Q(**{f"{prefix}pk__in": _submitted(user).values("image_id")})


# The Images page's filters computed from other annotators' labels of an image: its consensus (`level`,
# `attribute`), VISPR's labels (`vispr_label`; dataset versions are chosen from them: `dataset`) and who
# labelled it (`coverage`: how many reviewers submitted, whether a model did). Every one of them is a
# statement about others' labels, so a reviewer filters by them only among the images they have submitted.
OTHERS_LABEL_FILTERS = ("level", "attribute", "vispr_label", "dataset", "coverage")


def others_label_filters(filters: dict) -> list[str]:
    """The names in `filters` (cleaned filter data) that are derived from other annotators' labels and set."""
    return [name for name in OTHERS_LABEL_FILTERS if filters.get(name) not in (None, "", [])]


def restrict_by_others_labels(user, images, filters: dict):
    """`images` (a queryset of images) kept to those `user` may filter by others' labels, when `filters` use any
    such filter: a reviewer's list under `?vispr_label=`, `?dataset=`, `?coverage=` or `?level=` is the matching
    images among those they have submitted (an image they have not submitted is never listed, so being listed
    says nothing about its other labels). Apply it before those filters; staff lists are unchanged."""
    if not others_label_filters(filters):
        return images
    return images.filter(consensus_filter(user))


def may_see_others_labels(user, labeling: Labeling | None) -> bool:
    """Other annotators' labels of an image: staff always; a reviewer only through their own submitted labeling."""
    if sees_everything(user):
        return True
    return labeling is not None and labeling.status == Labeling.STATUS_SUBMITTED
