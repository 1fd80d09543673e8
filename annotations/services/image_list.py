"""The Images page's query: filters (split, dataset version, consensus level and attribute, annotator
coverage, VISPR label) and a search by id over the image table, one page at a time.

Every filter is a database condition, so a page costs a count and one page of rows however many
images there are. Consensus filters go through the seam (annotations.hooks). Every filter derived from other annotators'
labels (consensus, VISPR label, dataset version, coverage) goes through the blind rule
(`blind.restrict_by_others_labels`): a reviewer filters by them only among the images they have submitted."""
from __future__ import annotations

from django.db import connection
from django.db.models import Count, Q

from .. import blind
from ..hooks import consensus_scores
from ..models import Annotator, Image, Labeling
from .labeling_queue import labelings_per_image


def filtered_images(user, f: dict):
    """Images matching the cleaned ImageFilterForm data `f`, ordered by VISPR id."""
    images = blind.restrict_by_others_labels(user, Image.objects.order_by("vispr_id"), f)
    if f.get("q"):
        images = images.filter(vispr_id__icontains=f["q"])
    if f.get("split"):
        images = images.filter(split=f["split"])
    if f.get("dataset"):
        images = images.filter(dataset_versions=f["dataset"])
    if f.get("vispr_label"):
        images = with_vispr_label(images, f["vispr_label"])
    coverage = f.get("coverage")
    if coverage == "models":
        images = images.filter(labels__annotator__kind=Annotator.KIND_MODEL).distinct()
    elif coverage:
        submitted = Count("labelings", filter=Q(labelings__status=Labeling.STATUS_SUBMITTED,
                                                labelings__annotator__kind=Annotator.KIND_HUMAN), distinct=True)
        images = images.annotate(human_labelings=submitted)
        k = labelings_per_image()
        images = {"none": images.filter(human_labelings=0), "partial": images.filter(human_labelings__gt=0, human_labelings__lt=k),
                  "complete": images.filter(human_labelings__gte=k)}[coverage]
    if f.get("level") is not None or f.get("attribute"):
        profile = consensus_scores().active_profile()
        if profile is None:
            return images.none()
        images = consensus_scores().filter_images(profile, images, level=f.get("level"), attribute=f.get("attribute") or None)
    return images


def with_vispr_label(images, label: str):
    """Images whose VISPR label list holds `label` (JSON containment; SQLite has no `contains` on JSON)."""
    if connection.vendor == "postgresql":
        return images.filter(vispr_labels__contains=[label])
    table = Image._meta.db_table
    return images.extra(where=[f'EXISTS (SELECT 1 FROM json_each("{table}"."vispr_labels") WHERE json_each.value = %s)'],
                        params=[label])
