"""The profile fit from every stored published row: all splits, all imports, reported per split.

An import adds rows; the profile is then fitted again from every row stored for its ground-truth
annotator (an image with a published score and level and that annotator's 22 labels), never from the
last file alone, so importing test then train (or train then test, or a further small file) leaves
a profile that reproduces every published row or says which split it does not reproduce.

[decision] Files printed with different precision: the joint fit uses the coarsest split's tolerance,
then every split is checked against its own printed precision; the profile activates only when the
whole set and every split are reproduced.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotations import taxonomy
from annotations.models import Annotator, Image, Label

from .. import engine
from .. import fit as fit_lib


@dataclass
class StoredRows:
    ids: list[str]
    splits: np.ndarray  # Image.split per row
    counts: np.ndarray  # (rows, 4) per-level counts of the annotator's 1-labels
    scores: np.ndarray
    levels: np.ndarray


def stored_published_rows(annotator: Annotator, tax: taxonomy.Taxonomy) -> StoredRows:
    """Every image with a published score and level and a full label set from `annotator` (two queries)."""
    level_of_attr = {pk: tax.level_of[key] for key, pk in taxonomy.attribute_ids().items() if key in tax.level_of}
    images = list(Image.objects.filter(published_score__isnull=False, published_level__isnull=False,
                                       labels__annotator=annotator).distinct()
                  .order_by("id").values_list("id", "vispr_id", "split", "published_score", "published_level"))
    pos = {row[0]: i for i, row in enumerate(images)}
    counts = np.zeros((len(images), 4), dtype=np.int64)
    labelled = np.zeros(len(images), dtype=np.int64)
    for image_id, attribute_id, value in Label.objects.filter(annotator=annotator, image_id__in=list(pos)).values_list(
            "image_id", "attribute_id", "value"):
        level = level_of_attr.get(attribute_id)
        if level is None:
            continue
        i = pos[image_id]
        labelled[i] += 1
        if value == 1:
            counts[i, level - 1] += 1
    keep = labelled == len(tax.keys)
    return StoredRows(
        ids=[images[i][1] for i in np.flatnonzero(keep)],
        splits=np.array([images[i][2] for i in np.flatnonzero(keep)], dtype=object),
        counts=counts[keep],
        scores=np.array([images[i][3] for i in np.flatnonzero(keep)], dtype=float),
        levels=np.array([images[i][4] for i in np.flatnonzero(keep)], dtype=np.int64),
    )


def split_report(rows: StoredRows, fit: fit_lib.ProfileFit) -> list[dict]:
    """Per split: rows, printed precision and its tolerance, the profile's largest residual there, reproduced or not."""
    out = []
    scores = None
    if fit.bounds is not None and len(rows.ids):
        _, scores = engine.severity_array(rows.counts, fit.bounds, fit.weights)
    for split in sorted(set(rows.splits.tolist())):
        m = rows.splits == split
        decimals = fit_lib.printed_decimals(rows.scores[m])
        tol = fit_lib.tolerance(decimals)
        resid = None if scores is None else float(np.abs(scores[m] - rows.scores[m]).max())
        out.append({"split": split, "rows": int(m.sum()), "decimals": decimals, "tolerance": tol, "max_residual": resid,
                    "failing_rows": None if scores is None else int((np.abs(scores[m] - rows.scores[m]) > tol).sum()),
                    "reproduces": resid is not None and resid <= tol})
    return out


def fit_stored(rows: StoredRows) -> tuple[fit_lib.ProfileFit, list[dict]]:
    """The joint fit of every stored row, at the coarsest split's precision, and its per-split report."""
    known = [d for s in set(rows.splits.tolist()) if (d := fit_lib.printed_decimals(rows.scores[rows.splits == s])) is not None]
    decimals = min(known) if known else None
    joint = fit_lib.fit_profile(rows.counts, rows.scores, rows.levels, decimals=decimals)
    return joint, split_report(rows, joint)
