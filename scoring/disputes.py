"""Disagreements and what resolving them would change: pure functions over label arrays.

Labels arrive as in scoring.agreement: one float array `values` of shape (annotators, images,
attributes) holding 0, 0.5 or 1, NaN where an annotator gave no label.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .agreement import binarise_array
from .engine import Bounds, level_counts_array, severity_array



def disputed_items(values: np.ndarray, adjudicated: np.ndarray | None = None) -> np.ndarray:
    """(images, attributes) bool: at least two binarised labels that differ, and no adjudication."""
    binary = binarise_array(values)
    if binary.shape[0] == 0:  # no annotator at all: nothing is disputed
        return np.zeros(binary.shape[1:], dtype=bool)
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
    agreed = (np.nan_to_num(np.nanmax(np.where(np.isnan(binary), -np.inf, binary), axis=0), neginf=0.0)
              if binary.shape[0] else np.zeros(binary.shape[1:]))
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
