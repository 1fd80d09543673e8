"""Image-level cluster-bootstrap intervals for every agreement figure, and the prevalence-robust
agreement coefficients beside kappa (issue 27): pure functions over label arrays.

The items of one image (its 22 attributes, its annotators) are not independent, so the resampling unit
is the image: each resample draws images with replacement and every figure is recomputed from the
summed per-image counts of the drawn images (confusion matrices for a pair, rating counts for Fleiss'
kappa and the strict consensus rate, binarised and three-valued, coincidence matrices for Krippendorff's alpha). One draw of image
indices serves every figure of a study. Intervals are percentile 95% over the resamples in which the
figure is defined (the number is kept).

- PABAK (prevalence- and bias-adjusted kappa, Byrt et al. 1993) = 2 * p_o - 1 for two categories.
- Gwet's AC1 (Gwet 2008) = (p_o - p_e) / (1 - p_e) with p_e = sum_q pi_q (1 - pi_q) / (k - 1), pi_q the
  mean of the two raters' shares of category q. Both stay informative when an attribute is rare, where
  kappa collapses towards 0 even with high agreement.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import resample
from .engine import LEVELS

N_BOOT = 500
SEED = 20260324
CHUNK = 50


def pabak(cm: np.ndarray) -> np.ndarray:
    """(..., 2, 2) confusion counts -> PABAK; NaN where empty."""
    cm = np.asarray(cm, dtype=float)
    n = cm.sum(axis=(-2, -1))
    with np.errstate(all="ignore"):
        return 2 * np.trace(cm, axis1=-2, axis2=-1) / n - 1


def gwet_ac1(cm: np.ndarray) -> np.ndarray:
    """(..., k, k) confusion counts -> Gwet's AC1; NaN where empty."""
    cm = np.asarray(cm, dtype=float)
    k = cm.shape[-1]
    n = cm.sum(axis=(-2, -1))
    with np.errstate(all="ignore"):
        po = np.trace(cm, axis1=-2, axis2=-1) / n
        pi = (cm.sum(axis=-1) + cm.sum(axis=-2)) / (2 * n[..., None])
        pe = (pi * (1 - pi)).sum(axis=-1) / (k - 1)
        return (po - pe) / (1 - pe)


def kappa_from_confusion(cm: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa of (..., k, k) confusion counts, as sklearn computes it; NaN where undefined.

    Kappa is symmetric in the two raters, but floating-point sums in another order can differ in the
    last bit; the mean of both orders is exactly symmetric, so swapping raters changes no digit.
    """
    cm = np.asarray(cm, dtype=float)
    return (_kappa(cm, weights) + _kappa(np.swapaxes(cm, -1, -2), weights)) / 2


def _kappa(cm: np.ndarray, weights: str | None) -> np.ndarray:
    k = cm.shape[-1]
    i, j = np.indices((k, k))
    w = np.abs(i - j) / (k - 1) if weights == "linear" else (i != j).astype(float)
    n = cm.sum(axis=(-2, -1))
    with np.errstate(all="ignore"):
        expected = cm.sum(axis=-1)[..., :, None] * cm.sum(axis=-2)[..., None, :] / n[..., None, None]
        return 1 - (w * cm).sum(axis=(-2, -1)) / (w * expected).sum(axis=(-2, -1))


def per_image_confusions(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """(images, attributes, k, k) counts of label codes 0..k-1 where both raters labelled."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both = ~(np.isnan(a) | np.isnan(b))
    out = np.zeros(a.shape + (k, k))
    ia, ja = np.nonzero(both)
    np.add.at(out, (ia, ja, np.nan_to_num(a[both]).astype(int), np.nan_to_num(b[both]).astype(int)), 1)
    return out


def _percentiles(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, defined) over axis 0, NaN-aware."""
    defined = np.isfinite(samples).sum(axis=0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(samples, [2.5, 97.5], axis=0)
    return lo, hi, defined


def _resampled_sums(per_image: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(resamples, ...) sums over the drawn images of a (images, ...) array.

    The per-image arrays are mostly zeros (one confusion cell per item), so they are multiplied as a
    sparse matrix: the cost follows the non-zero counts, not images x cells (bench/metrics.py)."""
    n = per_image.shape[0]
    from scipy import sparse  # imported where used, not at start-up

    flat = sparse.csc_matrix(per_image.reshape(n, -1).T)  # (cells, images)
    out = np.empty((idx.shape[0], flat.shape[0]))
    for s in range(0, idx.shape[0], CHUNK):
        W = resample.multiplicities(idx[s:s + CHUNK], n).astype(float)
        out[s:s + W.shape[0]] = (flat @ W.T).T
    return out.reshape((idx.shape[0],) + per_image.shape[1:])


def _stack_levels(cm: np.ndarray, attr_levels: np.ndarray) -> np.ndarray:
    """(..., attributes, k, k) -> (..., attributes + 4 levels + overall, k, k)."""
    per_level = [cm[..., attr_levels == lv, :, :].sum(axis=-3) for lv in LEVELS]
    return np.concatenate([cm, np.stack(per_level, axis=-3), cm.sum(axis=-3)[..., None, :, :]], axis=-3)


def _interval_rows(samples: dict[str, np.ndarray], keys) -> dict:
    """{"overall", "attributes", "levels"} of {figure: {"lo", "hi", "defined"}} from (resamples, rows) samples."""
    bounds = {name: _percentiles(s) for name, s in samples.items()}

    def row(i):
        return {name: {"lo": _f(lo[i]), "hi": _f(hi[i]), "defined": int(d[i])} for name, (lo, hi, d) in bounds.items()}

    k = len(keys)
    return {"overall": row(k + len(LEVELS)), "attributes": {key: row(j) for j, key in enumerate(keys)},
            "levels": {str(lv): row(k + i) for i, lv in enumerate(LEVELS)}}


def _f(x) -> float | None:
    return float(x) if np.isfinite(x) else None


def pair_intervals(a, b, a3, b3, attr_levels, keys, idx: np.ndarray) -> dict:
    """Cluster-bootstrap intervals of agreement, kappa, PABAK, AC1 (binarised) and weighted kappa (three values)."""
    attr_levels = np.asarray(attr_levels)
    cm = _stack_levels(_resampled_sums(per_image_confusions(a, b, 2), idx), attr_levels)  # (B, rows, 2, 2)
    n = cm.sum(axis=(-2, -1))
    with np.errstate(all="ignore"):
        agree = np.trace(cm, axis1=-2, axis2=-1) / n
    samples = {"agreement": agree, "kappa": kappa_from_confusion(cm), "pabak": pabak(cm), "ac1": gwet_ac1(cm)}
    if a3 is not None and b3 is not None:
        cm3 = _stack_levels(_resampled_sums(per_image_confusions(np.asarray(a3) * 2, np.asarray(b3) * 2, 3), idx), attr_levels)
        samples["weighted_kappa"] = np.where(cm3.sum(axis=(-2, -1)) > 0, kappa_from_confusion(cm3, "linear"), np.nan)
    return _interval_rows(samples, keys)


def human_human_intervals(binary: np.ndarray, attr_levels, keys, idx: np.ndarray) -> dict:
    """Cluster-bootstrap intervals of the strict consensus rate and Fleiss' kappa of binarised human labels
    (humans, images, attributes), over items with >= 2 human labels."""
    binary = np.asarray(binary, dtype=float)
    if binary.shape[0] == 0:
        return {}
    ones = np.nansum(binary, axis=0)
    count = (~np.isnan(binary)).sum(axis=0)
    eligible = count >= 2
    same = eligible & ((ones == 0) | (ones == count))
    with np.errstate(all="ignore"):
        p_item = np.where(eligible, (ones * (ones - 1) + (count - ones) * (count - ones - 1)) / (count * (count - 1)), 0.0)
    parts = np.stack([eligible, same, p_item, np.where(eligible, ones, 0), np.where(eligible, count, 0)], axis=-1).astype(float)
    n, same_n, p_sum, ones_n, ratings = _resampled_rows(parts, attr_levels, keys, idx)
    with np.errstate(all="ignore"):
        strict = np.where(n > 0, same_n / n, np.nan)
        share = ones_n / ratings
        p_e = share**2 + (1 - share) ** 2
        fleiss = np.where((n > 0) & (p_e < 1), (p_sum / n - p_e) / (1 - p_e), np.nan)
    return _interval_rows({"strict": strict, "fleiss_kappa": fleiss}, keys)


def strict_consensus_intervals(human_values: np.ndarray, attr_levels, keys, idx: np.ndarray) -> dict:
    """Cluster-bootstrap intervals of the strict consensus rate (every human of an item gave the same label)
    on the binarised labels ("binary") and on the three-valued ones ("three_valued") of (humans, images,
    attributes) labels 0 / 0.5 / 1, over items with >= 2 human labels (scoring.agreement.strict_consensus)."""
    values = np.asarray(human_values, dtype=float)
    if values.shape[0] == 0:
        return {}
    count = (~np.isnan(values)).sum(axis=0)
    eligible = count >= 2
    ones = (values == 1.0).sum(axis=0)
    same_bin = eligible & ((ones == 0) | (ones == count))  # 0.5 counts as 0 once binarised
    same_3 = eligible & np.logical_or.reduce([(values == v).sum(axis=0) == count for v in (0.0, 0.5, 1.0)])
    n, bin_n, three_n = _resampled_rows(np.stack([eligible, same_bin, same_3], axis=-1).astype(float), attr_levels, keys, idx)
    with np.errstate(all="ignore"):
        return _interval_rows({"binary": np.where(n > 0, bin_n / n, np.nan), "three_valued": np.where(n > 0, three_n / n, np.nan)}, keys)


def _resampled_rows(parts: np.ndarray, attr_levels, keys, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-item counts (images, attributes, parts) summed over each resample's drawn images and over the
    attributes of each row (every attribute, every level, overall): one (resamples, rows) array per part."""
    sums = _resampled_sums(parts, idx)  # (B, attributes, parts)
    attr_levels = np.asarray(attr_levels)
    rows = [sums[:, j:j + 1] for j in range(len(keys))]
    rows += [sums[:, attr_levels == lv] for lv in LEVELS] + [sums]
    stacked = np.stack([r.sum(axis=1) for r in rows], axis=1)  # (B, rows, parts)
    return tuple(stacked[..., i] for i in range(parts.shape[-1]))


def per_image_coincidences(values: np.ndarray) -> np.ndarray:
    """(images, 3, 3) coincidence contributions of the items (image, attribute) with >= 2 values (0 / 0.5 / 1)."""
    values = np.asarray(values, dtype=float)
    counts = np.stack([(values == v).sum(axis=0) for v in (0.0, 0.5, 1.0)], axis=-1).astype(float)  # (images, attrs, 3)
    m = counts.sum(axis=-1)
    with np.errstate(all="ignore"):
        inv = np.where(m >= 2, 1.0 / (m - 1), 0.0)
    outer = counts[..., :, None] * counts[..., None, :] - counts[..., :, None] * np.eye(3)
    return (outer * inv[..., None, None]).sum(axis=1)


def alpha_from_coincidence(o: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's alpha of (..., k, k) coincidence matrices; NaN where undefined."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    k = o.shape[-1]
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(k), o.shape)
    else:
        cum = np.cumsum(n_c, axis=-1)
        delta = np.zeros(o.shape)
        for c in range(k):
            for d in range(k):
                lo, hi = min(c, d), max(c, d)
                below = cum[..., lo - 1] if lo > 0 else 0.0
                delta[..., c, d] = (cum[..., hi] - below - (n_c[..., c] + n_c[..., d]) / 2) ** 2
    with np.errstate(all="ignore"):
        d_o = (o * delta).sum(axis=(-2, -1))
        d_e = (n_c[..., :, None] * n_c[..., None, :] * delta).sum(axis=(-2, -1)) / (n - 1)
        return np.where(d_e > 0, 1 - d_o / d_e, np.nan)


def alpha_intervals(values: np.ndarray, images: np.ndarray | None, idx_all: np.ndarray, study_index: np.ndarray | None) -> dict:
    """Cluster-bootstrap intervals of alpha (nominal binarised, ordinal three-valued) of one annotator group.

    `idx_all` are the study's image draws; for a group restricted to `images` (the human study), the
    draw is over those images (`study_index`, the study's own resamples) so the population is kept."""
    values = np.asarray(values, dtype=float)
    if values.shape[0] < 2:
        return {}
    if images is not None:
        values = values[:, np.asarray(images, dtype=bool), :]
    idx = idx_all if images is None else study_index
    if idx is None or values.shape[1] == 0:
        return {}
    o3 = _resampled_sums(per_image_coincidences(values), idx)  # (B, 3, 3)
    o2 = np.stack([np.stack([o3[:, :2, :2].sum(axis=(1, 2)), o3[:, :2, 2].sum(axis=1)], axis=-1),
                   np.stack([o3[:, 2, :2].sum(axis=1), o3[:, 2, 2]], axis=-1)], axis=1)
    out = {}
    for name, samples in (("nominal_binary", alpha_from_coincidence(o2, "nominal")),
                          ("ordinal_three_valued", alpha_from_coincidence(o3, "ordinal"))):
        lo, hi, d = _percentiles(samples[:, None])
        out[name] = {"lo": _f(lo[0]), "hi": _f(hi[0]), "defined": int(d[0])}
    return out
