"""What an annotate run's page shows per image: the labels the model gave (yes / unsure) and how many of
them agree with the human labels of the image (each attribute's human majority, binarised as in the CPRT
score: 1 is present, 0 and 0.5 are not). Staff-only pages use it (the run pages are admin-only)."""
from __future__ import annotations

from collections import defaultdict

from annotations.models import Annotator, Label


def label_summaries(run, image_ids) -> dict[int, dict]:
    """image id -> {"yes": [keys], "unsure": [keys], "agreement": int | None, "compared": int}."""
    if run.annotator_id is None:
        return {}
    image_ids = list(image_ids)
    model = defaultdict(dict)
    for image_id, key, value in (Label.objects.filter(annotator_id=run.annotator_id, image_id__in=image_ids)
                                 .order_by("attribute__order").values_list("image_id", "attribute__key", "value")):
        model[image_id][key] = value
    humans = defaultdict(lambda: defaultdict(list))
    for image_id, key, value in (Label.objects.filter(image_id__in=image_ids, annotator__kind=Annotator.KIND_HUMAN)
                                 .values_list("image_id", "attribute__key", "value")):
        humans[image_id][key].append(1 if value == 1 else 0)
    out = {}
    for image_id, values in model.items():
        compared = agree = 0
        for key, votes in humans.get(image_id, {}).items():
            if key in values:
                compared += 1
                majority = 1 if sum(votes) * 2 > len(votes) else 0
                agree += int((1 if values[key] == 1 else 0) == majority)
        out[image_id] = {
            "yes": [k for k, v in values.items() if v == 1],
            "unsure": [k for k, v in values.items() if v == 0.5],
            "agreement": agree if compared else None,
            "compared": compared,
        }
    return out
