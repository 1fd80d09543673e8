"""Calibration of an annotate run: per-attribute positive rates vs the human majority and the consensus."""
from __future__ import annotations

import numpy as np

from inference.models import Run

from .. import agreement as agreement_lib
from .. import calibration, queries
from ..models import ImageScore, ScoringProfile
from .cache import jsonable


def run_calibration(run: Run, profile: ScoringProfile) -> dict:
    """Per-attribute positive-rate differences of an annotate run vs the human majority and vs the
    consensus ground truth of the active profile, over the run's images."""
    if run.annotator_id is None:
        return {"annotator": None, "human_majority": [], "consensus": [], "images": 0}
    image_ids = list(run.image_ids or [])
    data = queries.load_labels(image_ids=image_ids)
    keys, levels = data.keys, data.attr_levels
    if run.annotator_id not in data.annotator_ids:
        return {"annotator": run.annotator.name, "human_majority": [], "consensus": [], "images": len(image_ids)}
    values = np.asarray(data.values)
    me = data.annotator_ids.index(run.annotator_id)
    model = agreement_lib.binarise_array(values[me])
    is_human = [k == agreement_lib.HUMAN for k in data.kinds]
    majority = agreement_lib.human_majority(values, is_human)
    consensus = np.full(model.shape, np.nan)
    pos = {image_id: i for i, image_id in enumerate(data.image_ids)}
    key_index = {k: j for j, k in enumerate(keys)}
    for image_id, labels in ImageScore.objects.filter(profile=profile, image_id__in=data.image_ids).values_list("image_id", "binary_labels"):
        for key, value in labels.items():
            if key in key_index:
                consensus[pos[image_id], key_index[key]] = value
    return jsonable({
        "annotator": data.names[me], "images": len(data.image_ids),
        "human_majority": calibration.attribute_calibration(model, majority, keys, levels),
        "consensus": calibration.attribute_calibration(model, consensus, keys, levels),
    })
