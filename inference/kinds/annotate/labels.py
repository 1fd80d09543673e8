"""Writing an annotate run's labels: one label per attribute under the run's model annotator, and a
submitted labeling, in the transaction that stores the image's result. Through the one label-writing
API (annotations.services.labels), so a model's labels get history rows like everyone's."""
from __future__ import annotations

from annotations.services import labels as label_writes


def write_labels(run, out, attribute_ids: dict[str, int]) -> None:
    if not (out.labels and run.annotator_id):
        return
    values = {attribute_ids[key]: (value, rationale[:4000]) for key, (value, rationale) in out.labels.items()}
    label_writes.write_labels(out.image_id, run.annotator_id, values, submit=True)
