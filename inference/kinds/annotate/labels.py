"""Writing an annotate run's labels: one label per attribute under the run's model annotator, and a
submitted labeling, in the transaction that stores the image's result."""
from __future__ import annotations

from django.utils import timezone

from annotations.models import Label, Labeling


def write_labels(run, out, attribute_ids: dict[str, int]) -> None:
    if not (out.labels and run.annotator_id):
        return
    for key, (value, rationale) in out.labels.items():
        Label.objects.update_or_create(
            image_id=out.image_id, annotator_id=run.annotator_id, attribute_id=attribute_ids[key],
            defaults={"value": value, "rationale": rationale[:4000]},
        )
    Labeling.objects.update_or_create(
        image_id=out.image_id, annotator_id=run.annotator_id,
        defaults={"status": Labeling.STATUS_SUBMITTED, "submitted_at": timezone.now()},
    )
