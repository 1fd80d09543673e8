"""Annotator agreement (spec section 5) and disagreement impact: pure functions over label arrays.

Labels arrive as one float array `values` of shape (annotators, images, attributes) holding 0, 0.5
or 1, NaN where an annotator gave no label. The unit is one (image, attribute) item, binarised
(0.5 -> 0) unless a function says it uses the three-valued labels.

Decisions (documented in docs/scoring.md):
- Human-human agreement pools the items of every pair of human annotators (each pair once, the
  lower annotator index first), which is what a single "human-human" figure means with more than
  two reviewers; every individual pair is reported too.
- Models (and the imported ground truth) are compared with the human majority vote per item
  (engine.majority_vote: an even split gives 0) over items with at least one human label.
- Cohen's kappa is undefined (None) when both raters use a single, identical category.
- Weighted kappa uses linear weights over the ordered three values 0 < 0.5 < 1.
- Krippendorff's alpha uses the items of images labelled by more than two annotators: nominal on the
  binarised labels, ordinal on the three-valued ones.
- The human strict consensus rate counts items with at least two human labels.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from itertools import combinations
from typing import Sequence

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score

from .engine import LEVELS, Bounds, severity_array, level_counts_array

HUMAN, MODEL, GROUND_TRUTH = "human", "model", "ground_truth"
MAJORITY = "human majority"


def binarise_array(values: np.ndarray) -> np.ndarray:
    """0.5 -> 0, 1 -> 1, 0 -> 0, NaN stays NaN; anything else is refused."""
    values = np.asarray(values, dtype=float)
    present = ~np.isnan(values)
    bad = present & ~np.isin(values, (0.0, 0.5, 1.0))
    if bad.any():
        raise ValueError(f"{values[bad][0]!r} is not a valid label (0, 0.5 or 1).")
    return np.where(present, (values == 1.0).astype(float), np.nan)


def human_majority(values: np.ndarray, is_human: Sequence[bool]) -> np.ndarray:
    """(images, attributes) majority of the binarised human labels; NaN where no human labelled."""
    humans = binarise_array(np.asarray(values, dtype=float)[np.asarray(is_human, dtype=bool)])
    count = (~np.isnan(humans)).sum(axis=0)
    ones = np.nansum(humans, axis=0) if humans.size else np.zeros(count.shape)
    return np.where(count > 0, (ones * 2 > count).astype(float), np.nan)


# ---------------------------------------------------------------------------------------------
# One pair of raters


@dataclass
class PairStats:
    n: int
    agreement: float | None
    kappa: float | None
    weighted_kappa: float | None = None  # three-valued, linear weights

    def as_dict(self) -> dict:
        return {"n": self.n, "agreement": self.agreement, "kappa": self.kappa, "weighted_kappa": self.weighted_kappa}


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def cohen_kappa(a: np.ndarray, b: np.ndarray, labels: Sequence, weights: str | None = None) -> float | None:
    """sklearn's Cohen's kappa; None where it is undefined (e.g. both raters constant and equal)."""
    if len(a) == 0:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _finite(cohen_kappa_score(a, b, labels=list(labels), weights=weights))


def pair_stats(a: np.ndarray, b: np.ndarray, a3: np.ndarray | None = None, b3: np.ndarray | None = None) -> PairStats:
    """Agreement of two binary label vectors over the items both labelled (NaN = no label)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both = ~np.isnan(a) & ~np.isnan(b)
    x, y = a[both].astype(int), b[both].astype(int)
    n = int(both.sum())
    weighted = None
    if a3 is not None and b3 is not None:
        both3 = ~np.isnan(a3) & ~np.isnan(b3)
        weighted = cohen_kappa((a3[both3] * 2).astype(int), (b3[both3] * 2).astype(int), (0, 1, 2), "linear")
    return PairStats(n, float((x == y).mean()) if n else None, cohen_kappa(x, y, (0, 1)), weighted)


def breakdown(a: np.ndarray, b: np.ndarray, a3, b3, attr_levels: np.ndarray, keys: Sequence[str]) -> dict:
    """Overall, per attribute and per level stats for (images, attributes) arrays of two raters."""
    out = {"overall": pair_stats(a.ravel(), b.ravel(), None if a3 is None else a3.ravel(), None if b3 is None else b3.ravel()).as_dict()}
    out["attributes"] = {
        key: pair_stats(a[:, j], b[:, j], None if a3 is None else a3[:, j], None if b3 is None else b3[:, j]).as_dict()
        for j, key in enumerate(keys)
    }
    out["levels"] = {}
    for level in LEVELS:
        cols = attr_levels == level
        out["levels"][str(level)] = pair_stats(
            a[:, cols].ravel(), b[:, cols].ravel(),
            None if a3 is None else a3[:, cols].ravel(), None if b3 is None else b3[:, cols].ravel(),
        ).as_dict()
    return out


# ---------------------------------------------------------------------------------------------
# The whole study


@dataclass
class LabelSet:
    """Everything the agreement study needs, as plain data."""

    values: np.ndarray  # (annotators, images, attributes), NaN = no label
    names: list[str]
    kinds: list[str]  # "human" | "model" | "ground_truth"
    keys: list[str]  # attribute keys
    attr_levels: list[int]
    image_ids: list[int] = field(default_factory=list)
    annotator_ids: list[int] = field(default_factory=list)


def _group(kind_a: str, kind_b: str) -> str:
    kinds = sorted((kind_a, kind_b))
    return "-".join(kinds)


def agreement_report(data: LabelSet) -> dict:
    """Every annotator pair, the pooled human-human figure, each non-human vs the human majority,
    the human strict consensus rate, Krippendorff's alpha and the kappa matrix for the heatmap."""
    values = np.asarray(data.values, dtype=float)
    binary = binarise_array(values)
    attr_levels = np.asarray(data.attr_levels)
    keys = list(data.keys)
    A = values.shape[0]
    is_human = np.array([k == HUMAN for k in data.kinds], dtype=bool)

    pairs = []
    kappa_matrix = [[None] * A for _ in range(A)]
    for i, j in combinations(range(A), 2):
        stats_ij = breakdown(binary[i], binary[j], values[i], values[j], attr_levels, keys)
        if stats_ij["overall"]["n"] == 0:
            continue
        pairs.append({"a": data.names[i], "b": data.names[j], "group": _group(data.kinds[i], data.kinds[j]), **stats_ij})
        kappa_matrix[i][j] = kappa_matrix[j][i] = stats_ij["overall"]["kappa"]
    for i in range(A):
        if (~np.isnan(binary[i])).any():
            kappa_matrix[i][i] = 1.0

    # Pooled human-human: stack the items of every human pair.
    human_idx = np.flatnonzero(is_human)
    pooled = None
    if human_idx.size >= 2:
        left = [binary[i] for i, j in combinations(human_idx, 2)]
        right = [binary[j] for i, j in combinations(human_idx, 2)]
        left3 = [values[i] for i, j in combinations(human_idx, 2)]
        right3 = [values[j] for i, j in combinations(human_idx, 2)]
        pooled = breakdown(np.concatenate(left), np.concatenate(right), np.concatenate(left3), np.concatenate(right3), attr_levels, keys)

    majority = human_majority(values, is_human)
    vs_majority = []
    majority_kappas = [None] * A
    for i in np.flatnonzero(~is_human):
        stats_i = breakdown(binary[i], majority, None, None, attr_levels, keys)
        majority_kappas[i] = stats_i["overall"]["kappa"]
        if stats_i["overall"]["n"]:
            vs_majority.append({"a": data.names[i], "b": MAJORITY, "group": f"{data.kinds[i]}-human majority", **stats_i})

    return {
        "annotators": [{"name": n, "kind": k} for n, k in zip(data.names, data.kinds)],
        "pairs": pairs,
        "human_pooled": pooled,
        "vs_majority": vs_majority,
        "strict_consensus": strict_consensus(values[is_human], attr_levels, keys),
        "krippendorff": krippendorff_alpha(values),
        "kappa_matrix": {"names": list(data.names) + [MAJORITY], "matrix": [row + [majority_kappas[i]] for i, row in enumerate(kappa_matrix)]
                         + [majority_kappas + [None]]},
    }


def strict_consensus(human_values: np.ndarray, attr_levels: np.ndarray, keys: Sequence[str]) -> dict:
    """Share of items with >= 2 human labels on which every human gave the same label.

    Reported on the binarised labels (the spec's unit) and on the three-valued ones.
    """
    human_values = np.asarray(human_values, dtype=float)
    if human_values.shape[0] == 0:
        empty = {"n": 0, "binary": None, "three_valued": None}
        return {"overall": empty, "attributes": {k: empty for k in keys}, "levels": {str(lv): empty for lv in LEVELS}}
    binary = binarise_array(human_values)
    count = (~np.isnan(human_values)).sum(axis=0)
    eligible = count >= 2
    same_bin = np.nanmax(np.where(np.isnan(binary), -np.inf, binary), axis=0) == np.nanmin(np.where(np.isnan(binary), np.inf, binary), axis=0)
    same_3 = np.nanmax(np.where(np.isnan(human_values), -np.inf, human_values), axis=0) == np.nanmin(
        np.where(np.isnan(human_values), np.inf, human_values), axis=0
    )

    def rate(mask):
        n = int((eligible & mask).sum())
        return {
            "n": n,
            "binary": float((same_bin & eligible & mask).sum() / n) if n else None,
            "three_valued": float((same_3 & eligible & mask).sum() / n) if n else None,
        }

    everything = np.ones(eligible.shape, dtype=bool)
    cols = np.arange(eligible.shape[1])
    return {
        "overall": rate(everything),
        "attributes": {k: rate(everything & (cols == j)[None, :]) for j, k in enumerate(keys)},
        "levels": {str(lv): rate(everything & (np.asarray(attr_levels) == lv)[None, :]) for lv in LEVELS},
    }


def krippendorff_alpha(values: np.ndarray) -> dict:
    """Alpha over the items of images that more than two annotators labelled."""
    values = np.asarray(values, dtype=float)
    per_image = (~np.isnan(values)).any(axis=2).sum(axis=0)  # annotators per image
    images = np.flatnonzero(per_image > 2)
    result = {"images": int(images.size), "items": 0, "nominal_binary": None, "ordinal_three_valued": None}
    if images.size == 0:
        return result
    data = values[:, images, :].reshape(values.shape[0], -1)  # (annotators, items)
    data = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    result["items"] = int(data.shape[1])
    if data.shape[1] == 0:
        return result
    binary = binarise_array(data)
    for name, reliability, level, domain in (
        ("nominal_binary", binary, "nominal", [0.0, 1.0]),
        ("ordinal_three_valued", data, "ordinal", [0.0, 0.5, 1.0]),
    ):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                result[name] = _finite(krippendorff.alpha(reliability_data=reliability, level_of_measurement=level, value_domain=domain))
            except ValueError:  # a single value in the whole domain: alpha is undefined
                result[name] = None
    return result


# ---------------------------------------------------------------------------------------------
# Disagreements and what resolving them would change


def disputed_items(values: np.ndarray, adjudicated: np.ndarray | None = None) -> np.ndarray:
    """(images, attributes) bool: at least two binarised labels that differ, and no adjudication."""
    binary = binarise_array(values)
    hi = np.nanmax(np.where(np.isnan(binary), -np.inf, binary), axis=0)
    lo = np.nanmin(np.where(np.isnan(binary), np.inf, binary), axis=0)
    disputed = np.isfinite(hi) & np.isfinite(lo) & (hi != lo)
    if adjudicated is not None:
        disputed &= ~np.asarray(adjudicated, dtype=bool)
    return disputed


def dispute_impact(values: np.ndarray, adjudications: np.ndarray, attr_levels: Sequence[int], bounds: Bounds) -> dict[str, np.ndarray]:
    """Per image: what the score and level would be with every disputed attribute set to 0 vs to 1.

    Undisputed attributes take the value the annotators agree on (0 with no label at all) and
    adjudicated ones their adjudicated value. `impact` = score_hi - score_lo; `level_changes` says
    whether resolving the disputes could move the image to another level.
    """
    values = np.asarray(values, dtype=float)
    adjudications = np.asarray(adjudications, dtype=float)
    has_adj = ~np.isnan(adjudications)
    disputed = disputed_items(values, has_adj)
    binary = binarise_array(values)
    agreed = np.nan_to_num(np.nanmax(np.where(np.isnan(binary), -np.inf, binary), axis=0), neginf=0.0)
    base = np.where(has_adj, binarise_array(np.where(has_adj, adjudications, 0.0)), agreed)
    low = np.where(disputed, 0, base).astype(np.int8)
    high = np.where(disputed, 1, base).astype(np.int8)
    level_lo, score_lo = severity_array(level_counts_array(low, attr_levels), bounds)
    level_hi, score_hi = severity_array(level_counts_array(high, attr_levels), bounds)
    return {
        "disputed": disputed,
        "n_disputed": disputed.sum(axis=1),
        "score_lo": score_lo,
        "score_hi": score_hi,
        "level_lo": level_lo,
        "level_hi": level_hi,
        "impact": score_hi - score_lo,
        "level_changes": level_lo != level_hi,
    }


def pair_disagrees(values: np.ndarray, a: int, b: int) -> np.ndarray:
    """(images,) bool: annotators a and b both labelled some attribute and their binary labels differ."""
    binary = binarise_array(values)
    x, y = binary[a], binary[b]
    return ((~np.isnan(x)) & (~np.isnan(y)) & (x != y)).any(axis=1)
