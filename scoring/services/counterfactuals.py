"""Counterfactual faces: per-image score changes between a judge run and its counterfactual-faces twin."""
from __future__ import annotations

import numpy as np

from annotations import taxonomy
from annotations.models import Annotator, Image, Label
from inference.models import Run

from .. import metrics as metrics_lib
from .. import queries, significance
from ..models import ImageScore, ScoringProfile
from .cache import jsonable

# Level 1-2 attributes that are read off documents, text, skin or objects rather than off a face:
# a "counterfactual faces" run that drops its score on these images ignores real risk.
SENSITIVE_NON_FACE = (
    "gov_ids", "unique_body_markings", "contact_details", "full_legal_name",
    "non_unique_id", "medical_data", "financial_data",
)


def counterfactual_candidates() -> list[tuple[Run, Run]]:
    """(without, with) pairs of finished judge runs sharing provider, model and strategy."""
    runs = queries.finished_judge_runs()
    plain = [r for r in runs if not r.counterfactual_faces and not r.face_variant]  # pixel-level runs: three_way
    faces = [r for r in runs if r.counterfactual_faces and not r.face_variant]
    return [(a, b) for a in plain for b in faces if (a.provider, a.model_name, a.strategy) == (b.provider, b.model_name, b.strategy)]


def consensus_labels(image_ids: list[int], profile: ScoringProfile) -> dict[int, dict]:
    """image id -> {attribute key: 1, ...}: the profile's consensus, else the ground-truth annotator's labels
    (images with neither are absent)."""
    binary = {}
    for image_id, labels in ImageScore.objects.filter(profile=profile, image_id__in=image_ids).values_list("image_id", "binary_labels"):
        binary[image_id] = labels
    missing = [i for i in image_ids if i not in binary]
    if missing:
        attr_key = {v: k for k, v in taxonomy.attribute_ids().items()}
        for image_id, attribute_id in Label.objects.filter(
            image_id__in=missing, annotator__kind=Annotator.KIND_GROUND_TRUTH, value=1.0
        ).values_list("image_id", "attribute_id"):
            binary.setdefault(image_id, {})[attr_key.get(attribute_id)] = 1
    return binary


def counterfactual(base: Run, cf: Run, profile: ScoringProfile, drop: float) -> dict:
    """Per-image score change from `base` to `cf`, collapses, and groups by sensitive non-face attributes."""
    results = queries.judge_results([base.pk, cf.pk])
    def ok_scores(r):
        keep = (r["outcome"] == "ok") & np.isfinite(r["score"])
        return dict(zip(r["image_id"][keep].tolist(), r["score"][keep].tolist()))

    before, after = ok_scores(results[base.pk]), ok_scores(results[cf.pk])
    common = sorted(set(before) & set(after))
    binary = consensus_labels(common, profile)
    vispr = dict(Image.objects.filter(id__in=common).values_list("id", "vispr_id"))
    rows = []
    for image_id in common:
        delta = after[image_id] - before[image_id]
        labels = binary.get(image_id, {})
        sensitive = [k for k in SENSITIVE_NON_FACE if labels.get(k) == 1]
        rows.append({
            "image_id": image_id, "vispr_id": vispr.get(image_id, ""), "score_without": before[image_id],
            "score_with": after[image_id], "change": delta, "collapsed": delta <= -drop, "sensitive_non_face": sensitive,
            "has_consensus": image_id in binary,
        })
    deltas = np.array([r["change"] for r in rows], dtype=float)
    groups = []
    for key in SENSITIVE_NON_FACE:
        members = [r for r in rows if key in r["sensitive_non_face"]]
        groups.append({
            "attribute": key, "images": len(members), "collapsed": sum(r["collapsed"] for r in members),
            "mean_change": float(np.mean([r["change"] for r in members])) if members else None,
        })
    counts, edges = metrics_lib.histogram(deltas, bins=40, lo=-1.0, hi=1.0)
    return jsonable({
        "common": len(common),
        "only_without": len(set(before) - set(after)),
        "only_with": len(set(after) - set(before)),
        "mean_change": float(deltas.mean()) if deltas.size else None,
        "median_change": float(np.median(deltas)) if deltas.size else None,
        "change_test": significance.paired_change(deltas),
        "collapsed": int(sum(r["collapsed"] for r in rows)),
        "collapsed_sensitive": int(sum(r["collapsed"] and bool(r["sensitive_non_face"]) for r in rows)),
        "rows": rows,
        "groups": groups,
        "histogram": {"counts": counts, "edges": edges},
    })
