"""Per-attribute calibration of an annotate run (spec section 4, the paper's Section 4 analysis).

For each attribute: the model's positive rate minus the reference's positive rate on the same
images, where the reference is the human majority (two or more humans, an even split gives 0) or the
consensus ground truth. Labels are binarised (0.5 -> 0). Positive differences are over-prediction.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

PAPER_FINDING = ("The paper (Section 4) finds that models over-predict most attributes by more than 10 "
                 "percentage points relative to humans, and under-predict race/ethnicity.")


def attribute_calibration(model: np.ndarray, reference: np.ndarray, keys: Sequence[str], levels: Sequence[int]) -> list[dict]:
    """model, reference: (images, attributes) binary with NaN where missing. One row per attribute."""
    model = np.asarray(model, dtype=float)
    reference = np.asarray(reference, dtype=float)
    both = ~np.isnan(model) & ~np.isnan(reference)
    rows = []
    for j, key in enumerate(keys):
        m = both[:, j]
        n = int(m.sum())
        model_rate = float(model[m, j].mean()) if n else None
        reference_rate = float(reference[m, j].mean()) if n else None
        rows.append({
            "attribute": key, "level": int(levels[j]), "n": n, "model_rate": model_rate, "reference_rate": reference_rate,
            "difference": None if not n else model_rate - reference_rate,
        })
    return rows


SORTS = {
    "difference": lambda r: -(r["difference"] if r["difference"] is not None else -9),
    "abs": lambda r: -(abs(r["difference"]) if r["difference"] is not None else -1),
    "attribute": lambda r: r["attribute"],
    "level": lambda r: (r["level"], r["attribute"]),
    "model_rate": lambda r: -(r["model_rate"] if r["model_rate"] is not None else -1),
}


def sort_rows(rows: list[dict], key: str) -> list[dict]:
    return sorted(rows, key=SORTS.get(key, SORTS["difference"]))
