"""Annotator agreement (spec section 5): pure functions over label arrays (disagreement impact: scoring.disputes).

Labels arrive as one float array `values` of shape (annotators, images, attributes) holding 0, 0.5
or 1, NaN where an annotator gave no label. The unit is one (image, attribute) item, binarised
(0.5 -> 0) unless a function says it uses the three-valued labels.

Decisions (documented in docs/scoring.md):
- The human-human figures are the paper's: the strict consensus rate (every human of an item gave
  the same label) and a multi-rater kappa, Fleiss' kappa (Fleiss 1971, with the usual extension to a
  varying number of raters per item: each item's agreement is averaged over its own rater pairs,
  category shares are pooled over all ratings). Both are symmetric in the annotators, so no figure
  depends on the order or the names of annotators (a test renames and reorders them). Every
  individual pair is still listed with Cohen's kappa, which is symmetric too.
- The human study population: agreement involving humans is computed on images with at least two
  human labelings (the count is reported).
- VISPR's own labels (an annotator of kind "dataset", mapped onto the CPRT attributes, no label where
  nothing maps) are one more annotator: every pair with it is grouped "model vs VISPR labels" or "human
  vs VISPR labels", and it is compared with the human majority; never mixed into Krippendorff's alpha.
- Models (and the imported ground truth) are compared with the human majority vote per item
  (an even split gives 0), which exists only where at least two humans labelled the item.
- Cohen's kappa is undefined (None) when both raters use a single, identical category.
- Weighted kappa uses linear weights over the ordered three values 0 < 0.5 < 1.
- Krippendorff's alpha is reported for humans only, models only and all annotators (humans and
  models; the imported ground truth, derived from model labels, is left out), each over the items
  that at least two annotators of that group labelled: nominal on the binarised labels, ordinal on
  the three-valued ones.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Sequence

import numpy as np

from . import agreement_ci, resample
from .agreement_ci import kappa_from_confusion  # noqa: F401  (the agreement API names it here too)
from .engine import LEVELS

HUMAN, MODEL, GROUND_TRUTH, DATASET = "human", "model", "ground_truth", "dataset"
MAJORITY = "human majority"
VISPR_GROUP = "VISPR labels"  # how a dataset annotator (VISPR's own labels, mapped) is named in groups


def binarise_array(values: np.ndarray) -> np.ndarray:
    """0.5 -> 0, 1 -> 1, 0 -> 0, NaN stays NaN; anything else is refused."""
    values = np.asarray(values, dtype=float)
    ones = values == 1.0
    valid = ones | (values == 0.0) | (values == 0.5)
    if not (valid | np.isnan(values)).all():
        bad = ~valid & ~np.isnan(values)
        raise ValueError(f"{values[bad][0]!r} is not a valid label (0, 0.5 or 1).")
    out = ones.astype(float)
    out[~valid] = np.nan
    return out


def human_majority(values: np.ndarray, is_human: Sequence[bool], minimum: int = 2) -> np.ndarray:
    """(images, attributes) majority of the binarised human labels (an even split gives 0); NaN
    where fewer than `minimum` humans labelled the item (one label is no majority)."""
    humans = binarise_array(np.asarray(values, dtype=float)[np.asarray(is_human, dtype=bool)])
    count = (~np.isnan(humans)).sum(axis=0)
    ones = np.nansum(humans, axis=0) if humans.size else np.zeros(count.shape)
    return np.where(count >= minimum, (ones * 2 > count).astype(float), np.nan)


# ---------------------------------------------------------------------------------------------
# One pair of raters


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _confusions(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """(attributes, k, k) counts of label codes 0..k-1 over images where both raters labelled."""
    n_attr = a.shape[1]
    both = ~(np.isnan(a) | np.isnan(b))
    code = (np.nan_to_num(a) * k + np.nan_to_num(b)).astype(np.int64) + np.arange(n_attr) * (k * k)
    code = np.where(both, code, n_attr * k * k)  # one extra bin for items not labelled by both
    return np.bincount(code.ravel(), minlength=n_attr * k * k + 1)[:-1].reshape(n_attr, k, k)


def _stacked(cm: np.ndarray, attr_levels: np.ndarray) -> np.ndarray:
    """(attributes + 4 levels + overall, k, k): per attribute, per level, overall confusions."""
    per_level = [cm[attr_levels == lv].sum(axis=0) for lv in LEVELS]
    return np.concatenate([cm, np.stack(per_level), cm.sum(axis=0)[None]], axis=0)


def breakdown(a: np.ndarray, b: np.ndarray, a3, b3, attr_levels: np.ndarray, keys: Sequence[str]) -> dict:
    """Overall, per attribute and per level stats for (images, attributes) arrays of two raters."""
    attr_levels = np.asarray(attr_levels)
    cm2 = _stacked(_confusions(np.asarray(a, dtype=float), np.asarray(b, dtype=float), 2), attr_levels)
    n = cm2.sum(axis=(1, 2))
    with np.errstate(all="ignore"):
        agree = np.trace(cm2, axis1=1, axis2=2) / n
    kappa = kappa_from_confusion(cm2)
    robust_pabak, robust_ac1 = agreement_ci.pabak(cm2), agreement_ci.gwet_ac1(cm2)
    weighted = None
    if a3 is not None and b3 is not None:
        cm3 = _stacked(_confusions(np.asarray(a3, dtype=float) * 2, np.asarray(b3, dtype=float) * 2, 3), attr_levels)
        weighted = np.where(cm3.sum(axis=(1, 2)) > 0, kappa_from_confusion(cm3, "linear"), np.nan)
    rows = [{"n": int(n[i]), "agreement": _finite(agree[i]) if n[i] else None, "kappa": _finite(kappa[i]) if n[i] else None,
             "weighted_kappa": None if weighted is None else _finite(weighted[i]),
             "pabak": _finite(robust_pabak[i]) if n[i] else None, "ac1": _finite(robust_ac1[i]) if n[i] else None}
            for i in range(cm2.shape[0])]
    k = len(keys)
    return {
        "overall": rows[-1],
        "attributes": {key: rows[j] for j, key in enumerate(keys)},
        "levels": {str(lv): rows[k + i] for i, lv in enumerate(LEVELS)},
    }


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
    """"human-model", "model-model"...; a pair with VISPR's labels reads "model vs VISPR labels"."""
    if DATASET in (kind_a, kind_b):
        other = kind_b if kind_a == DATASET else kind_a
        return f"{other} vs {VISPR_GROUP}"
    kinds = sorted((kind_a, kind_b))
    return "-".join(kinds)


def human_study_images(values: np.ndarray, is_human: np.ndarray) -> np.ndarray:
    """(images,) bool: at least two human annotators labelled the image."""
    labelled = (~np.isnan(np.asarray(values, dtype=float)[is_human])).any(axis=2)
    return labelled.sum(axis=0) >= 2


def agreement_report(data: LabelSet, resamples: int = agreement_ci.N_BOOT) -> dict:
    """Every annotator pair (Cohen's kappa), the human strict consensus rate and Fleiss' kappa (the
    paper's human-human figures), each non-human vs the human majority, Krippendorff's alpha per
    annotator kind and the kappa matrix for the heatmap.

    Nothing depends on the order of annotators: annotators are listed sorted by (kind, name), and
    every figure is symmetric in them.
    """
    # The imported ground truth is derived from model labels, not an annotator: it is never listed here.
    order = sorted((i for i in range(len(data.names)) if data.kinds[i] != GROUND_TRUTH), key=lambda i: (data.kinds[i], data.names[i]))
    values = np.asarray(data.values, dtype=float)
    if order == list(range(values.shape[0])):  # load_labels lists them so: a read-only view, not a copy (70 MB at 100k)
        values = values.view()
        values.flags.writeable = False
    else:
        values = values[order] if order else np.full((0,) + values.shape[1:], np.nan)
    names = [data.names[i] for i in order]
    kinds = [data.kinds[i] for i in order]
    binary = binarise_array(values)
    attr_levels = np.asarray(data.attr_levels)
    keys = list(data.keys)
    A = values.shape[0]
    is_human = np.array([k == HUMAN for k in kinds], dtype=bool)
    study = human_study_images(values, is_human) if A else np.zeros(values.shape[1], dtype=bool)
    # Agreement involving humans uses the human study population only.
    in_study = np.where(study[None, :, None], values, np.nan)
    binary_study = np.where(study[None, :, None], binary, np.nan)
    # One draw of images for every interval: over all images, and over the human study images for
    # figures involving humans (the population each figure is computed on).
    n_images, n_study = values.shape[1], int(study.sum())
    # Each is read once (agreement_ci.Draw's one pass), a block of resamples at a time: never held whole (issue 37).
    idx_all = resample.LazyDraw(n_images, resamples, agreement_ci.SEED) if n_images and resamples else None
    idx_study = resample.LazyDraw(n_study, resamples, agreement_ci.SEED) if n_study and resamples else None
    # Every interval's sums are registered on the draw first and computed in one pass per draw (agreement_ci.Draw);
    # `pending` fills each figure's "ci" once every figure has registered.
    draws = {key: None if idx is None else agreement_ci.Draw(idx) for key, idx in (("all", idx_all), ("study", idx_study))}
    pending: list[tuple[dict, Callable[[], dict]]] = []

    def population(with_humans: bool, i: int, j: int | None = None) -> dict:
        both = ~np.isnan(values[i]) & (True if j is None else ~np.isnan(values[j]))
        if with_humans:
            return {"rule": "human study images", "images": int((both & study[:, None]).any(axis=1).sum())}
        return {"rule": "all images labelled by both", "images": int(both.any(axis=1).sum())}

    pairs = []
    kappa_matrix = [[None] * A for _ in range(A)]
    for i, j in combinations(range(A), 2):
        humans_in = bool(is_human[i] or is_human[j])
        source, source_bin = (in_study, binary_study) if humans_in else (values, binary)
        stats_ij = breakdown(source_bin[i], source_bin[j], source[i], source[j], attr_levels, keys)
        if stats_ij["overall"]["n"] == 0:
            continue
        cols, draw = (study, draws["study"]) if humans_in else (slice(None), draws["all"])
        pairs.append({"a": names[i], "b": names[j], "group": _group(kinds[i], kinds[j]), **stats_ij, "ci": {},
                      "population": population(humans_in, i, j)})
        if draw is not None:
            pending.append((pairs[-1], agreement_ci.pair_intervals_on(draw, source_bin[i][cols], source_bin[j][cols], source[i][cols],
                                                                       source[j][cols], attr_levels, keys)))
        kappa_matrix[i][j] = kappa_matrix[j][i] = stats_ij["overall"]["kappa"]
    for i in range(A):
        if (~np.isnan(binary[i])).any():
            kappa_matrix[i][i] = 1.0

    majority = human_majority(in_study, is_human)
    vs_majority = []
    majority_kappas = [None] * A
    for i in np.flatnonzero(~is_human):
        stats_i = breakdown(binary_study[i], majority, None, None, attr_levels, keys)
        majority_kappas[i] = stats_i["overall"]["kappa"]
        if stats_i["overall"]["n"]:
            group = f"{VISPR_GROUP} vs human majority" if kinds[i] == DATASET else f"{kinds[i]}-human majority"
            vs_majority.append({"a": names[i], "b": MAJORITY, "group": group, **stats_i, "ci": {},
                                "population": population(True, i)})
            if draws["study"] is not None:
                pending.append((vs_majority[-1], agreement_ci.pair_intervals_on(
                    draws["study"], binary_study[i][study], majority[study], None, None, attr_levels, keys)))

    humans = in_study[is_human]
    hh = human_human(humans, attr_levels, keys)
    hh["ci"] = {}
    if draws["study"] is not None:
        pending.append((hh, agreement_ci.human_human_intervals_on(draws["study"], binarise_array(humans[:, study]), attr_levels, keys)))
    krippendorff = krippendorff_by_kind(values, kinds, study)
    kinds_arr = np.asarray(kinds)
    for row, mask, images in zip(krippendorff, (kinds_arr == HUMAN, kinds_arr == MODEL, (kinds_arr == HUMAN) | (kinds_arr == MODEL)),
                                 (study, None, study)):
        row["ci"] = {}
        if resamples:
            pending.append((row, agreement_ci.alpha_intervals_on(draws, values[mask], images)))
    consensus = {**strict_consensus(humans, attr_levels, keys), "ci": {}}
    if draws["study"] is not None:
        pending.append((consensus, agreement_ci.strict_consensus_intervals_on(draws["study"], humans[:, study], attr_levels, keys)))
    for row, intervals in pending:
        row["ci"] = intervals()
    return {
        "annotators": [{"name": n, "kind": k} for n, k in zip(names, kinds)],
        "human_study": {"images": int(study.sum()), "all_images": int(values.shape[1]), "humans": int(is_human.sum()),
                        "rule": "images with at least two human labelings"},
        "pairs": pairs,
        "human_human": hh,
        "vs_majority": vs_majority,
        "strict_consensus": consensus,
        "krippendorff": krippendorff,
        "bootstrap": {"resamples": resamples, "seed": agreement_ci.SEED, "unit": "image (cluster bootstrap)",
                      "method": "percentile, 95%"},
        "kappa_matrix": {"names": names + [MAJORITY], "matrix": [row + [majority_kappas[i]] for i, row in enumerate(kappa_matrix)]
                         + [majority_kappas + [None]]},
    }


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' kappa of (items, categories) rating counts; items may have different numbers of raters
    (at least two each). P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)); p_j pooled over all ratings."""
    counts = np.asarray(counts, dtype=float)
    n_i = counts.sum(axis=1)
    counts = counts[n_i >= 2]
    n_i = n_i[n_i >= 2]
    if counts.shape[0] == 0:
        return None
    p_i = (counts * (counts - 1)).sum(axis=1) / (n_i * (n_i - 1))
    p_j = counts.sum(axis=0) / n_i.sum()
    p_e = float((p_j**2).sum())
    if p_e >= 1.0:
        return None
    return _finite((p_i.mean() - p_e) / (1 - p_e))


def human_human(human_values: np.ndarray, attr_levels: np.ndarray, keys: Sequence[str]) -> dict:
    """The paper's human-human row: strict consensus rate and Fleiss' kappa (binarised), overall, per
    level and per attribute, over items with at least two human labels."""
    human_values = np.asarray(human_values, dtype=float)
    if human_values.shape[0] == 0:
        empty = {"n": 0, "strict": None, "fleiss_kappa": None}
        return {"overall": empty, "attributes": {k: empty for k in keys}, "levels": {str(lv): empty for lv in LEVELS}}
    binary = binarise_array(human_values)
    ones = np.nansum(binary, axis=0)
    count = (~np.isnan(binary)).sum(axis=0)
    eligible = count >= 2
    same = eligible & ((ones == 0) | (ones == count))
    # Column sums: every figure of a set of attributes is a ratio of sums over its columns.
    n_col = eligible.sum(axis=0)
    same_col = same.sum(axis=0)
    with np.errstate(all="ignore"):
        p_item = np.where(eligible, (ones * (ones - 1) + (count - ones) * (count - ones - 1)) / (count * (count - 1)), 0.0)
    p_col = p_item.sum(axis=0)
    ones_col = np.where(eligible, ones, 0).sum(axis=0)
    ratings_col = np.where(eligible, count, 0).sum(axis=0)

    def figures(cols: np.ndarray) -> dict:
        n = int(n_col[cols].sum())
        if not n:
            return {"n": 0, "strict": None, "fleiss_kappa": None}
        share = ones_col[cols].sum() / ratings_col[cols].sum()
        p_e = share**2 + (1 - share) ** 2
        kappa = None if p_e >= 1 else _finite((p_col[cols].sum() / n - p_e) / (1 - p_e))
        return {"n": n, "strict": float(same_col[cols].sum() / n), "fleiss_kappa": kappa}

    attr_levels = np.asarray(attr_levels)
    everything = np.arange(len(keys))
    return {
        "overall": figures(everything),
        "attributes": {k: figures(np.array([j])) for j, k in enumerate(keys)},
        "levels": {str(lv): figures(np.flatnonzero(attr_levels == lv)) for lv in LEVELS},
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

    n_col = eligible.sum(axis=0)
    bin_col = (same_bin & eligible).sum(axis=0)
    three_col = (same_3 & eligible).sum(axis=0)

    def rate(cols):
        n = int(n_col[cols].sum())
        return {
            "n": n,
            "binary": float(bin_col[cols].sum() / n) if n else None,
            "three_valued": float(three_col[cols].sum() / n) if n else None,
        }

    return {
        "overall": rate(np.arange(len(keys))),
        "attributes": {k: rate(np.array([j])) for j, k in enumerate(keys)},
        "levels": {str(lv): rate(np.flatnonzero(np.asarray(attr_levels) == lv)) for lv in LEVELS},
    }


def krippendorff_alpha(values: np.ndarray, images: np.ndarray | None = None) -> dict:
    """Alpha (nominal on binarised labels, ordinal on three-valued ones) over the items that at least
    two of the given annotators labelled, on the given images (all by default)."""
    values = np.asarray(values, dtype=float)
    if images is not None:
        values = values[:, np.asarray(images, dtype=bool), :]
    result = {"annotators": int(values.shape[0]), "images": 0, "items": 0, "nominal_binary": None, "ordinal_three_valued": None}
    if values.shape[0] < 2:
        return result
    data = values.reshape(values.shape[0], -1)
    labelled = (~np.isnan(data)).sum(axis=0)
    result["items"] = int((labelled >= 2).sum())  # items with fewer than two values drop out of the coincidences
    result["images"] = int(((~np.isnan(values)).sum(axis=0) >= 2).any(axis=1).sum()) if values.shape[1] else 0
    if result["items"] == 0:
        return result
    binarise_array(data)  # refuses anything but 0, 0.5, 1
    counts, freq = _category_counts(data, (0.0, 0.5, 1.0))
    # Binarised (0.5 -> 0): the same items with the 0 and 0.5 counts merged.
    binary = np.stack([counts[:, 0] + counts[:, 1], counts[:, 2]], axis=1)
    result["nominal_binary"] = alpha_from_counts(binary, freq, level="nominal")
    result["ordinal_three_valued"] = alpha_from_counts(counts, freq, level="ordinal")
    return result


def _category_counts(data: np.ndarray, domain) -> tuple[np.ndarray, np.ndarray]:
    """Distinct per-item value-count patterns (patterns, categories) and how many items have each:
    items are encoded as sum over annotators of base^category, so one bincount finds the patterns."""
    base = data.shape[0] + 1
    code = np.zeros(data.shape[1], dtype=np.int64)
    for c, v in enumerate(domain):
        code += (data == v).sum(axis=0, dtype=np.int64) * base**c
    freq = np.bincount(code)
    patterns = np.flatnonzero(freq)
    counts = np.stack([(patterns // base**c) % base for c in range(len(domain))], axis=1).astype(float)
    return counts, freq[patterns].astype(float)


def alpha_from_counts(counts: np.ndarray, freq: np.ndarray | None = None, *, level: str) -> float | None:
    """Krippendorff's alpha from (items, categories) value counts (items with >= 2 values; `freq`
    items per row), via the coincidence matrix; "nominal" or "ordinal" (categories in their order).
    Equals the `krippendorff` package's value (tests check it); written out because that package
    takes seconds on 10^5 items."""
    freq = np.ones(counts.shape[0]) if freq is None else np.asarray(freq, dtype=float)
    m = counts.sum(axis=1)
    counts, freq, m = counts[m >= 2], freq[m >= 2], m[m >= 2]
    if counts.shape[0] == 0:
        return None
    k = counts.shape[1]
    inv = freq / (m - 1)
    weighted = counts * inv[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    else:
        cum = np.cumsum(n_c)
        delta = np.zeros((k, k))
        for c in range(k):
            for d in range(k):
                lo, hi = min(c, d), max(c, d)
                delta[c, d] = (cum[hi] - (cum[lo - 1] if lo > 0 else 0) - (n_c[c] + n_c[d]) / 2) ** 2
    d_o = (o * delta).sum()
    d_e = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    if d_e == 0:
        return None
    return _finite(1 - d_o / d_e)


def krippendorff_by_kind(values: np.ndarray, kinds: Sequence[str], human_study: np.ndarray) -> list[dict]:
    """Alpha for humans only (human study images), models only, and humans and models together
    (human study images); the imported ground truth is never mixed in."""
    kinds = np.asarray(kinds)
    out = []
    for label, mask, images in (
        ("humans only", kinds == HUMAN, human_study),
        ("models only", kinds == MODEL, None),
        ("humans and models (imported ground truth left out)", (kinds == HUMAN) | (kinds == MODEL), human_study),
    ):
        out.append({"annotators_kind": label, **krippendorff_alpha(np.asarray(values)[mask], images)})
    return out
