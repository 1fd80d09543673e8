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
from collections.abc import Callable

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


def confusion_cells(a: np.ndarray, b: np.ndarray, k: int):
    """Per-image confusion counts of label codes 0..k-1 where both raters labelled, as a sparse
    (attributes * k * k, images) matrix of ones: one cell per item, written straight from the labels."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    from scipy import sparse  # imported where used, not at start-up

    both = ~(np.isnan(a) | np.isnan(b))
    images, attributes = np.nonzero(both)
    cells = (attributes * k + a[both].astype(np.int64)) * k + b[both].astype(np.int64)
    shape = (a.shape[1] * k * k, a.shape[0])
    return sparse.csc_matrix((np.ones(cells.size), (cells, images)), shape=shape), (a.shape[1], k, k)


def _percentiles(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, defined) over axis 0, NaN-aware."""
    defined = np.isfinite(samples).sum(axis=0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(samples, [2.5, 97.5], axis=0)
    return lo, hi, defined


class Draw:
    """One draw of image indices and the per-image arrays to sum over it, all in one pass.

    Figures register their per-image arrays (`add`: a dense (images, ...) array, or a sparse (cells,
    images) matrix with its cell shape) before any result is read; the first `result` then counts each
    chunk's multiplicities once, as an (images, resamples) array, and multiplies it with every array
    at once (one sparse matrix: the per-image arrays are mostly zeros, so the cost follows the non-zero
    counts). Each output cell adds its images in image order, as a pass per array did, so the sums are
    the same numbers; one pass instead of one per figure keeps the study linear in the images."""

    def __init__(self, idx: np.ndarray):
        self.idx = idx
        self._blocks: list = []
        self._shapes: list[tuple] = []
        self._sums: list[np.ndarray] | None = None

    def add(self, per_image, shape: tuple | None = None) -> int:
        """Register a (images, ...) array, or a sparse (cells, images) matrix whose cells have `shape`."""
        from scipy import sparse  # imported where used, not at start-up

        if self._sums is not None:
            raise RuntimeError("this draw's sums were computed already; register every array first")
        if shape is None:
            per_image = np.asarray(per_image)
            per_image, shape = sparse.csc_matrix(per_image.reshape(per_image.shape[0], -1).T), per_image.shape[1:]
        self._blocks.append(per_image)
        self._shapes.append(tuple(shape))
        return len(self._blocks) - 1

    def result(self, i: int) -> np.ndarray:
        """(resamples, ...) sums over the drawn images of the i-th registered array."""
        if self._sums is None:
            self._sums = self._compute()
        return self._sums[i]

    def _compute(self) -> list[np.ndarray]:
        from scipy import sparse

        # Each registered matrix times the chunk's multiplicities on its own (issue 37): the rows of a stacked matrix
        # were the same products, and stacking them (through COO) took 250 MB at 30,000 images.
        blocks = [sparse.csc_matrix(block) for block in self._blocks]
        n, B = blocks[0].shape[1], self.idx.shape[0]
        out = np.empty((sum(block.shape[0] for block in blocks), B))
        for s, drawn in resample.blocks(self.idx, CHUNK):  # an array, or a LazyDraw made a block at a time
            W = _multiplicities_by_image(drawn, n)
            start = 0
            for block in blocks:
                out[start:start + block.shape[0], s:s + W.shape[1]] = block @ W
                start += block.shape[0]
        sums, start = [], 0
        for block, shape in zip(self._blocks, self._shapes):
            part = out[start:start + block.shape[0]]
            start += block.shape[0]
            sums.append(np.ascontiguousarray(part.T).reshape((B,) + shape))
        return sums


def _multiplicities_by_image(idx: np.ndarray, n: int) -> np.ndarray:
    """(images, resamples) float counts of each image in each resample of `idx` (resamples, draws): the
    layout the sparse product reads row by row."""
    k = idx.shape[0]
    flat = idx.astype(np.intp) * k
    flat += np.arange(k, dtype=np.intp)[:, None]
    return np.bincount(flat.ravel(), minlength=n * k).reshape(n, k).astype(float)


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
    """Cluster-bootstrap intervals of agreement, kappa, PABAK, AC1 (binarised) and weighted kappa (three values, linear weights)."""
    draw = Draw(idx)
    pending = pair_intervals_on(draw, a, b, a3, b3, attr_levels, keys)
    return pending()


def pair_intervals_on(draw: Draw, a, b, a3, b3, attr_levels, keys) -> Callable[[], dict]:
    """pair_intervals over a shared draw: registers its sums now, computes the intervals when called."""
    attr_levels = np.asarray(attr_levels)
    three = binary = None
    if a3 is not None and b3 is not None:
        three = draw.add(*confusion_cells(np.asarray(a3) * 2, np.asarray(b3) * 2, 3))
    folded = three is not None and _binarised(a3, a) and _binarised(b3, b)
    if not folded:
        binary = draw.add(*confusion_cells(a, b, 2))

    def intervals() -> dict:
        cm = _stack_levels(fold_binary(draw.result(three)) if folded else draw.result(binary), attr_levels)  # (B, rows, 2, 2)
        n = cm.sum(axis=(-2, -1))
        with np.errstate(all="ignore"):
            agree = np.trace(cm, axis1=-2, axis2=-1) / n
        samples = {"agreement": agree, "kappa": kappa_from_confusion(cm), "pabak": pabak(cm), "ac1": gwet_ac1(cm)}
        if three is not None:
            cm3 = _stack_levels(draw.result(three), attr_levels)
            samples["weighted_kappa"] = np.where(cm3.sum(axis=(-2, -1)) > 0, kappa_from_confusion(cm3, "linear"), np.nan)
        return _interval_rows(samples, keys)

    return intervals


def _binarised(three, binary) -> bool:
    """`binary` is `three` (labels 0 / 0.5 / 1, NaN where none) binarised: 1 -> 1, 0 and 0.5 -> 0, NaN kept."""
    three = np.asarray(three, dtype=float)
    return np.array_equal(np.where(np.isnan(three), np.nan, (three == 1.0).astype(float)), np.asarray(binary, dtype=float), equal_nan=True)


def fold_binary(cm3: np.ndarray) -> np.ndarray:
    """(..., 3, 3) confusion counts of labels 0 / 0.5 / 1 -> (..., 2, 2) of the binarised labels (0 and 0.5 -> 0).

    A pair's binary confusion counts are sums of its three-valued ones, so one set of per-image cells serves
    both (issue 37: at 100,000 images each pair's binary cells held 27 MB on the draw and a third of its
    products). The counts are integers (exact in float64), so the sums are the same numbers as counted directly."""
    low, high = cm3[..., :2, :], cm3[..., 2:, :]
    rows = np.stack([low.sum(axis=-2), high[..., 0, :]], axis=-2)  # (..., 2, 3)
    return np.stack([rows[..., :2].sum(axis=-1), rows[..., 2]], axis=-1)


def human_human_intervals(binary: np.ndarray, attr_levels, keys, idx: np.ndarray) -> dict:
    """Cluster-bootstrap intervals of the strict consensus rate and Fleiss' kappa of binarised human labels
    (humans, images, attributes), over items with >= 2 human labels."""
    return human_human_intervals_on(Draw(idx), binary, attr_levels, keys)()


def human_human_intervals_on(draw: Draw, binary: np.ndarray, attr_levels, keys) -> Callable[[], dict]:
    """human_human_intervals over a shared draw: registers its sums now, computes the intervals when called."""
    binary = np.asarray(binary, dtype=float)
    if binary.shape[0] == 0:
        return dict
    ones = np.nansum(binary, axis=0)
    count = (~np.isnan(binary)).sum(axis=0)
    eligible = count >= 2
    same = eligible & ((ones == 0) | (ones == count))
    with np.errstate(all="ignore"):
        p_item = np.where(eligible, (ones * (ones - 1) + (count - ones) * (count - ones - 1)) / (count * (count - 1)), 0.0)
    parts = np.stack([eligible, same, p_item, np.where(eligible, ones, 0), np.where(eligible, count, 0)], axis=-1).astype(float)
    rows = _resampled_rows_on(draw, parts, attr_levels, keys)

    def intervals() -> dict:
        n, same_n, p_sum, ones_n, ratings = rows()
        with np.errstate(all="ignore"):
            strict = np.where(n > 0, same_n / n, np.nan)
            share = ones_n / ratings
            p_e = share**2 + (1 - share) ** 2
            fleiss = np.where((n > 0) & (p_e < 1), (p_sum / n - p_e) / (1 - p_e), np.nan)
        return _interval_rows({"strict": strict, "fleiss_kappa": fleiss}, keys)

    return intervals


def strict_consensus_intervals(human_values: np.ndarray, attr_levels, keys, idx: np.ndarray) -> dict:
    """Cluster-bootstrap intervals of the strict consensus rate (every human of an item gave the same label)
    on the binarised labels ("binary") and on the three-valued ones ("three_valued") of (humans, images,
    attributes) labels 0 / 0.5 / 1, over items with >= 2 human labels (scoring.agreement.strict_consensus)."""
    return strict_consensus_intervals_on(Draw(idx), human_values, attr_levels, keys)()


def strict_consensus_intervals_on(draw: Draw, human_values: np.ndarray, attr_levels, keys) -> Callable[[], dict]:
    """strict_consensus_intervals over a shared draw: registers its sums now, computes the intervals when called."""
    values = np.asarray(human_values, dtype=float)
    if values.shape[0] == 0:
        return dict
    count = (~np.isnan(values)).sum(axis=0)
    eligible = count >= 2
    ones = (values == 1.0).sum(axis=0)
    same_bin = eligible & ((ones == 0) | (ones == count))  # 0.5 counts as 0 once binarised
    same_3 = eligible & np.logical_or.reduce([(values == v).sum(axis=0) == count for v in (0.0, 0.5, 1.0)])
    rows = _resampled_rows_on(draw, np.stack([eligible, same_bin, same_3], axis=-1).astype(float), attr_levels, keys)

    def intervals() -> dict:
        n, bin_n, three_n = rows()
        with np.errstate(all="ignore"):
            return _interval_rows({"binary": np.where(n > 0, bin_n / n, np.nan), "three_valued": np.where(n > 0, three_n / n, np.nan)}, keys)

    return intervals


def _resampled_rows_on(draw: Draw, parts: np.ndarray, attr_levels, keys) -> Callable[[], tuple[np.ndarray, ...]]:
    """Per-item counts (images, attributes, parts) registered on the draw; when called: their sums over each
    resample's drawn images and over the attributes of each row (every attribute, every level, overall), one
    (resamples, rows) array per part."""
    registered = draw.add(parts)
    attr_levels = np.asarray(attr_levels)

    def rows() -> tuple[np.ndarray, ...]:
        sums = draw.result(registered)  # (B, attributes, parts)
        by_row = [sums[:, j:j + 1] for j in range(len(keys))]
        by_row += [sums[:, attr_levels == lv] for lv in LEVELS] + [sums]
        stacked = np.stack([r.sum(axis=1) for r in by_row], axis=1)  # (B, rows, parts)
        return tuple(stacked[..., i] for i in range(parts.shape[-1]))

    return rows


IMAGE_BLOCK = 5000  # images whose (attributes, 3, 3) temporaries are made at a time (per_image_coincidences)


def per_image_coincidences(values: np.ndarray) -> np.ndarray:
    """(images, 3, 3) coincidence contributions of the items (image, attribute) with >= 2 values (0 / 0.5 / 1),
    IMAGE_BLOCK images at a time (each image's sum is its own: the same numbers, bounded temporaries)."""
    values = np.asarray(values, dtype=float)
    if values.shape[1] > IMAGE_BLOCK:
        return np.concatenate([_image_coincidences(values[:, s:s + IMAGE_BLOCK]) for s in range(0, values.shape[1], IMAGE_BLOCK)])
    return _image_coincidences(values)


def _image_coincidences(values: np.ndarray) -> np.ndarray:
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
    draws = {key: None if idx is None else Draw(idx) for key, idx in (("all", idx_all), ("study", study_index))}
    return alpha_intervals_on(draws, values, images)()


def alpha_intervals_on(draws: dict, values: np.ndarray, images: np.ndarray | None) -> Callable[[], dict]:
    """alpha_intervals over shared draws {"all": Draw | None, "study": Draw | None}: registers its sums now,
    computes the intervals when called."""
    values = np.asarray(values, dtype=float)
    if values.shape[0] < 2:
        return dict
    if images is not None:
        values = values[:, np.asarray(images, dtype=bool), :]
    draw = draws["all"] if images is None else draws["study"]
    if draw is None or values.shape[1] == 0:
        return dict
    registered = draw.add(per_image_coincidences(values))

    def intervals() -> dict:
        o3 = draw.result(registered)  # (B, 3, 3)
        o2 = np.stack([np.stack([o3[:, :2, :2].sum(axis=(1, 2)), o3[:, :2, 2].sum(axis=1)], axis=-1),
                       np.stack([o3[:, 2, :2].sum(axis=1), o3[:, 2, 2]], axis=-1)], axis=1)
        out = {}
        for name, samples in (("nominal_binary", alpha_from_coincidence(o2, "nominal")),
                              ("ordinal_three_valued", alpha_from_coincidence(o3, "ordinal"))):
            lo, hi, d = _percentiles(samples[:, None])
            out[name] = {"lo": _f(lo[0]), "hi": _f(hi[0]), "defined": int(d[0])}
        return out

    return intervals
