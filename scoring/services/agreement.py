"""Agreement between annotators (the agreement page, cached) and an annotate run's model vs ground truth."""
from __future__ import annotations

import numpy as np

from inference.models import Run

from .. import agreement as agreement_lib
from .. import agreement_ci, queries, resample
from .cache import cached, jsonable

# Agreement

# Bumped when the report gains figures, so a report stored by older code is recomputed, not served without them.
REPORT_FORMAT = 3

# Assisted labels (docs/scoring.md): by default a study leaves out the human labelings made with model suggestions in
# view, since the paper's human-vs-model agreement assumes humans answered without seeing the model.
DEFAULT_ASSISTED = "exclude"
ASSISTED_MODES = queries.ASSISTED_MODES


def study_key(split: str = "", assisted: str = DEFAULT_ASSISTED) -> str:
    """The cache key of the agreement study of a split (all images: "") and assisted mode (the default's key has no suffix)."""
    return f"agreement:{split or 'all'}" + ("" if assisted == DEFAULT_ASSISTED else f":assisted-{assisted}")


def agreement_study(split: str = "", assisted: str = DEFAULT_ASSISTED) -> dict:
    if assisted not in ASSISTED_MODES:
        raise ValueError(f"assisted must be one of {', '.join(ASSISTED_MODES)}; got {assisted!r}.")
    # The study reads no adjudication: deciding an attribute keeps its figures current (issue 37).
    fingerprint = queries.digest(queries.label_fingerprint(split, adjudications=False), REPORT_FORMAT)

    def compute():
        report = agreement_lib.agreement_report(queries.load_labels(split=split, assisted=assisted))
        report["assisted"] = assisted_summary(queries.assisted_counts(split), assisted)
        report["human_human"]["assisted_labelings"] = report["assisted"]["counted_assisted"]
        return report

    return cached(study_key(split, assisted), fingerprint, compute, spec={"kind": "agreement", "split": split, "assisted": assisted},
                  size=lambda: queries.labelings_estimate(split))


def assisted_summary(counts: dict, mode: str) -> dict:
    """What a study in `mode` counted of the submitted human labelings: how many, how many of those were assisted,
    how many were left out (the report's `assisted`; every figure involving humans reads these labelings)."""
    total, assisted = counts["human_labelings"], counts["assisted_labelings"]
    counted = {"include": total, "exclude": total - assisted, "only": assisted}[mode]
    human_labels = {"include": "independent and assisted", "exclude": "independent only", "only": "assisted only"}[mode]
    return {"mode": mode, "human_labels": human_labels, "human_labelings": total, "assisted_labelings": assisted,
            "counted_human_labelings": counted, "counted_assisted": assisted if mode != "exclude" else 0, "left_out": total - counted}


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    agreement_study(spec["split"], spec.get("assisted", DEFAULT_ASSISTED))


def annotate_run_agreement(run: Run) -> dict:
    """For an annotate run: its model annotator vs each imported ground truth, VISPR's mapped labels
    (the `vispr` annotator) and the human majority, per attribute, over the run's images."""
    if run.annotator_id is None:
        return {"annotator": None, "comparisons": []}
    image_ids = list(run.image_ids or [])
    data = queries.load_labels(image_ids=image_ids)
    if run.annotator_id not in data.annotator_ids:
        return {"annotator": run.annotator.name, "comparisons": []}
    values = np.asarray(data.values)
    binary = agreement_lib.binarise_array(values)
    attr_levels = np.asarray(data.attr_levels)
    me = data.annotator_ids.index(run.annotator_id)
    idx = resample.draw(values.shape[1], agreement_ci.N_BOOT, agreement_ci.SEED) if values.shape[1] else None

    def compare(other: np.ndarray) -> dict:
        ci = {} if idx is None else agreement_ci.pair_intervals(binary[me], other, None, None, attr_levels, data.keys, idx)
        return {**agreement_lib.breakdown(binary[me], other, None, None, attr_levels, data.keys), "ci": ci}

    comparisons = []
    for i, kind in enumerate(data.kinds):
        if kind in (agreement_lib.GROUND_TRUTH, agreement_lib.DATASET) and i != me:  # imported truth, VISPR's labels
            comparisons.append({"against": data.names[i], **compare(binary[i])})
    is_human = [k == agreement_lib.HUMAN for k in data.kinds]
    if any(is_human):
        comparisons.append({"against": agreement_lib.MAJORITY, **compare(agreement_lib.human_majority(values, is_human))})
    return jsonable({"annotator": data.names[me], "comparisons": comparisons, "resamples": agreement_ci.N_BOOT if idx is not None else 0})
