"""Vectorised bootstrap kernels: every metric of every resample at once, from one index draw.

A bootstrap resample of n images is described by its multiplicities: `W[b, i]` = how many times
image i was drawn in resample b (each row sums to n). Every metric of a resample is a function of
the original arrays weighted by W, so the resampled arrays are never materialised and no Python
loop runs over resamples. Indices are drawn once per run (`draw`) and reused by every metric, so
intervals of different metrics (and of two runs in a paired comparison) come from the same images.

The pairwise counts follow the definitions in scoring.metrics exactly (pairs of *positions* in the
resample, so two copies of one image form a pair tied in the ground truth, which is not counted):
- tie counts per ground-truth group, prediction group and joint group come from sums of W per group;
- concordant minus discordant comes from one weighted merge-sort sweep over the images sorted by
  (ground truth, prediction); the sweep's index arithmetic depends only on the order, so it is
  precomputed once and applied to all resamples as a few gathers and cumulative sums per level.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def draw(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) bootstrap indices: the single draw every metric of a run reuses."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int32 if n < 2**31 else np.int64)


def multiplicities(idx: np.ndarray, n: int) -> np.ndarray:
    """(resamples, n) counts of each image in each resample."""
    B = idx.shape[0]
    return np.bincount((idx + (np.arange(B)[:, None] * n)).ravel(), minlength=B * n).reshape(B, n)


# ---------------------------------------------------------------------------------------------
# Pairwise counts


@dataclass
class ResampledPairs:
    """Per-resample pair counts, each a (resamples,) int64 array."""

    pairs: np.ndarray
    concordant: np.ndarray
    discordant: np.ndarray
    pred_ties: np.ndarray

    def __sub__(self, other: "ResampledPairs") -> "ResampledPairs":
        return ResampledPairs(self.pairs - other.pairs, self.concordant - other.concordant,
                              self.discordant - other.discordant, self.pred_ties - other.pred_ties)

    def __add__(self, other: "ResampledPairs") -> "ResampledPairs":
        return ResampledPairs(self.pairs + other.pairs, self.concordant + other.concordant,
                              self.discordant + other.discordant, self.pred_ties + other.pred_ties)

    def accuracy(self) -> np.ndarray:
        """Ties count 0.5; NaN where a resample has no pair."""
        with np.errstate(all="ignore"):
            return np.where(self.pairs > 0, (self.concordant + 0.5 * self.pred_ties) / np.maximum(self.pairs, 1), np.nan)

    def strict_accuracy(self) -> np.ndarray:
        """Ties count as wrong."""
        with np.errstate(all="ignore"):
            return np.where(self.pairs > 0, self.concordant / np.maximum(self.pairs, 1), np.nan)

    def tie_share(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.where(self.pairs > 0, self.pred_ties / np.maximum(self.pairs, 1), np.nan)


class _Sweep:
    """The index plan of a weighted merge-sort sweep for one fixed order of items (see module doc)."""

    def __init__(self, rank: np.ndarray):
        n = rank.size
        P = int(rank.max()) + 1 if n else 1
        self.levels = []
        size = 1
        pos = np.arange(n)
        while size < n:
            blk = pos // (2 * size)
            side = (pos // size) % 2
            left = np.flatnonzero(side == 0)
            right = np.flatnonzero(side == 1)
            lkeys = blk[left] * P + rank[left]
            lorder = np.argsort(lkeys, kind="stable")
            K = lkeys[lorder]
            rk = blk[right] * P + rank[right]
            a = np.searchsorted(K, rk, "left")
            b = np.searchsorted(K, rk, "right")
            start = np.searchsorted(K, blk[right] * P, "left")
            end = np.searchsorted(K, (blk[right] + 1) * P, "left")
            self.levels.append((left[lorder], right, a, b, start, end))
            size *= 2

    def signed_sum(self, W: np.ndarray) -> np.ndarray:
        """Per resample: sum over position pairs l < k (in this order) of sign(rank_k - rank_l)."""
        B = W.shape[0]
        total = np.zeros(B, dtype=np.int64)
        zero = np.zeros((B, 1), dtype=np.int32)
        for left_sorted, right, a, b, start, end in self.levels:
            cw = np.concatenate([zero, np.cumsum(W[:, left_sorted], axis=1, dtype=np.int32)], axis=1)
            diff = (cw[:, a] + cw[:, b]) - (cw[:, start] + cw[:, end])  # (less) - (greater)
            total += np.einsum("ij,ij->i", W[:, right].astype(np.int64), diff.astype(np.int64))
        return total


def _dense_rank(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1].ravel()


GRID_MAX = 400_000  # cells of the (gt row x prediction value) grid above which the merge sweep is used


def _tied(M: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per resample: position pairs whose cells share `keys` (copies of one image included)."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    S = np.add.reduceat(M[:, order], starts, axis=1)
    return (S * (S - 1) // 2).sum(axis=1)


def _rows(gt: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, bool]:
    """Grid row of each cell: distinct (gt, level) sorted by gt, then level descending; and whether
    every level's rows are contiguous in that order (so one grid serves the intra-level count)."""
    keys = np.stack([gt, -level.astype(float)], axis=1)
    uniq, row = np.unique(keys, axis=0, return_inverse=True)
    lv = -uniq[:, 1]
    runs = lv[np.concatenate(([True], lv[1:] != lv[:-1]))]
    return row.ravel(), np.unique(runs).size == runs.size


def pair_counts_cells(M: np.ndarray, gt: np.ndarray, pred: np.ndarray, level: np.ndarray, margins: dict | None = None) -> dict[str, ResampledPairs]:
    """{"all", "intra", "inter"} pair counts from multiplicities M (resamples, cells) of distinct
    (gt, pred, level) cells.

    Grid rows are (gt, level), columns prediction values. After a 2-D cumulative sum, the grid at a
    cell holds the count of positions in rows <= its row and columns <= its column (dominance), and
    sum_c M_c * grid_c = (row-strict concordant) + (same row, lower pred) + (lower row, same pred)
    + sum_c M_c^2 (inclusion-exclusion); the middle terms and ties are group sums. Cells of one gt
    value in two levels (the shared boundary score) are row-strict but gt-tied: their concordant
    count is removed explicitly. Intra-level dominance is the same grid minus the rows before the
    level's block. Grids too large for memory fall back to a weighted merge-sort sweep per level.
    """
    B, C = M.shape
    z = np.zeros(B, dtype=np.int64)
    if C == 0:
        empty = ResampledPairs(z, z, z, z)
        return {"all": empty, "intra": empty, "inter": empty}
    row, contiguous = _rows(gt, level)
    pr = _dense_rank(pred)
    lv = np.asarray(level)
    levels = np.unique(lv)
    R, P = int(row.max()) + 1, int(pr.max()) + 1
    M32 = M.astype(np.int32, copy=False)
    jt = np.einsum("ij,ij->i", M32, M32, dtype=np.int64)
    N = M32.sum(axis=1, dtype=np.int64)
    jt = (jt - N) // 2  # sum of M(M-1)/2: cells are distinct (gt, pred, level)
    cross = _same_gt_other_level(M, gt, pred, row, jt_only=True)  # same (gt, pred) in two levels
    jt_gp = jt + cross
    if R * P > GRID_MAX or not contiguous:
        M64 = M.astype(np.int64)
        xt, yt = _tied(M64, _dense_rank(gt)), _tied(M64, pr)
        xt_row, yt_lv = _tied(M64, row), _tied(M64, _dense_rank(lv) * P + pr)
        Nl = np.stack([M64[:, lv == v].sum(axis=1) for v in levels], axis=1)
        pairs, ties = N * (N - 1) // 2 - xt, yt - jt_gp
        pairs_i, ties_i = (Nl * (Nl - 1) // 2).sum(axis=1) - xt_row, yt_lv - jt
        return _pair_counts_sweep(M64, gt, pred, lv, pairs, ties, pairs_i, ties_i, xt, jt_gp)

    flat = row * P + pr
    row_level = np.zeros(R, dtype=lv.dtype)
    row_level[row] = lv
    blocks = {}
    for v in levels:
        rows_v = np.flatnonzero(row_level == v)
        blocks[v] = (int(rows_v.min()), int(rows_v.max()))
    block_start = np.array([blocks[v][0] for v in lv])
    later = np.flatnonzero(block_start > 0)
    wanted_rows = sorted({R - 1} | {b for _, b in blocks.values()} | {a - 1 for a, _ in blocks.values() if a > 0})
    at_cell, row_total, at_rows, below = _grid_pass(M32, flat, R, P, wanted_rows, (block_start[later] - 1) * P + pr[later])

    def choose2(x):
        return (x * (x - 1) // 2).sum(axis=1)

    def column_totals(upto_row: np.ndarray) -> np.ndarray:
        return np.diff(upto_row.astype(np.int64), axis=1, prepend=0)

    row_gt = np.zeros(R)
    row_gt[row] = gt
    gt_starts = np.flatnonzero(np.concatenate(([True], row_gt[1:] != row_gt[:-1])))
    xt = choose2(np.add.reduceat(row_total, gt_starts, axis=1))  # gt runs in row order = gt value order
    xt_row = choose2(row_total)
    pred_totals = column_totals(at_rows[R - 1])
    yt = choose2(pred_totals)
    if margins is not None:  # group sizes per prediction value and per gt value, for Spearman's ranks
        margins["pred"] = pred_totals
        margins["gt"] = np.add.reduceat(row_total, gt_starts, axis=1)
    yt_lv = np.zeros(B, dtype=np.int64)
    Nl = []
    for v in levels:
        first, last = blocks[v]
        upto = at_rows[last].astype(np.int64) - (at_rows[first - 1] if first > 0 else 0)
        yt_lv += choose2(column_totals(upto))
        Nl.append(row_total[:, first:last + 1].sum(axis=1))
    Nl = np.stack(Nl, axis=1)
    pairs, ties = N * (N - 1) // 2 - xt, yt - jt_gp
    pairs_i, ties_i = (Nl * (Nl - 1) // 2).sum(axis=1) - xt_row, yt_lv - jt

    square = 2 * jt + N
    dominated = np.einsum("ij,ij->i", M32, at_cell, dtype=np.int64)
    concordant = dominated - (xt_row - jt) - (yt - jt) - square - _same_gt_other_level(M, gt, pred, row)
    dominated_i = dominated - np.einsum("ij,ij->i", M32[:, later], below, dtype=np.int64)
    conc_i = dominated_i - (xt_row - jt) - (yt_lv - jt) - square
    total = ResampledPairs(pairs, concordant, pairs - ties - concordant, ties)
    intra = ResampledPairs(pairs_i, conc_i, pairs_i - ties_i - conc_i, ties_i)
    return {"all": total, "intra": intra, "inter": total - intra}


GRID_CHUNK = 16  # resamples per pass: one chunk's grid stays in the CPU cache


def _grid_pass(M32, flat, R, P, wanted_rows, below_at):
    """2-D cumulative sums of each resample's (row x prediction) grid, a few resamples at a time.

    Returns the dominance count at every cell, each row's total, the cumulated grid rows asked for
    (B, P) and the cumulated grid at the flat positions `below_at`.
    """
    B, C = M32.shape
    at_cell = np.empty((B, C), dtype=np.int32)
    row_total = np.empty((B, R), dtype=np.int64)
    at_rows = {r: np.empty((B, P), dtype=np.int32) for r in wanted_rows}
    below = np.empty((B, len(below_at)), dtype=np.int32)
    buffer = np.zeros((GRID_CHUNK, R * P), dtype=np.int32)
    for s in range(0, B, GRID_CHUNK):
        k = min(GRID_CHUNK, B - s)
        grid = buffer[:k]
        grid[...] = 0
        grid[:, flat] = M32[s:s + k]
        cube = grid.reshape(k, R, P)
        np.cumsum(cube, axis=2, out=cube)
        row_total[s:s + k] = cube[:, :, P - 1]
        np.cumsum(cube, axis=1, out=cube)
        at_cell[s:s + k] = grid[:, flat]
        below[s:s + k] = grid[:, below_at]
        for r in wanted_rows:
            at_rows[r][s:s + k] = cube[:, r, :]
    return at_cell, row_total, at_rows, below


def _same_gt_other_level(M, gt, pred, row, jt_only: bool = False) -> np.ndarray:
    """Position pairs in different rows (levels) of one gt value: with the earlier row's prediction
    lower, or (jt_only) with equal predictions."""
    out = np.zeros(M.shape[0], dtype=np.int64)
    values, counts = np.unique(gt, return_counts=True)
    for value in values[counts > 1]:
        cols = np.flatnonzero(gt == value)
        r = row[cols]
        if np.unique(r).size < 2:
            continue
        pc = pred[cols]
        if jt_only:
            below = (r[:, None] < r[None, :]) & (pc[:, None] == pc[None, :])
        else:
            below = (r[:, None] < r[None, :]) & (pc[:, None] < pc[None, :])
        out += np.einsum("bi,ij,bj->b", M[:, cols], below.astype(np.int64), M[:, cols])
    return out


def _pair_counts_sweep(M, gt, pred, lv, pairs, ties, pairs_i, ties_i, xt, jt_gp) -> dict[str, ResampledPairs]:
    """Fallback: concordant - discordant from a weighted merge-sort sweep (all, then per level)."""
    def signed(cols):
        order = cols[np.lexsort((pred[cols], gt[cols]))]
        g_o = gt[order]
        sweep = _Sweep(_dense_rank(pred[order])).signed_sum(np.ascontiguousarray(M[:, order].astype(np.int32)))
        # Same-gt pairs were counted +1 when their predictions differ (sorted by pred within gt).
        same = _tied(M[:, order], _dense_rank(g_o)) - _tied(M[:, order], _dense_rank(g_o) * (pred.size + 1) + _dense_rank(pred[order]))
        return sweep - same

    everything = np.arange(gt.size)
    conc = (pairs - ties + signed(everything)) // 2
    s_i = sum(signed(np.flatnonzero(lv == v)) for v in np.unique(lv))
    conc_i = (pairs_i - ties_i + s_i) // 2
    total = ResampledPairs(pairs, conc, pairs - ties - conc, ties)
    intra = ResampledPairs(pairs_i, conc_i, pairs_i - ties_i - conc_i, ties_i)
    return {"all": total, "intra": intra, "inter": total - intra}


def resampled_pair_counts(W: np.ndarray, gt: np.ndarray, pred: np.ndarray) -> ResampledPairs:
    """Pair counts of every resample from item multiplicities W (scoring.metrics.pair_counts of each)."""
    gt = np.asarray(gt, dtype=float)
    cells = Cells(gt, np.asarray(pred, dtype=float), np.zeros(gt.size, dtype=np.int64))
    return cells.pairs_by_level(cells.from_items(W))["all"]


def resampled_pair_counts_by_level(W: np.ndarray, gt: np.ndarray, pred: np.ndarray, level: np.ndarray) -> dict[str, ResampledPairs]:
    """{"all", "intra", "inter"} from item multiplicities W (see Cells for the path from indices)."""
    cells = Cells(np.asarray(gt, dtype=float), np.asarray(pred, dtype=float), np.asarray(level))
    return cells.pairs_by_level(cells.from_items(W))


class Cells:
    """Items merged into distinct (gt, pred, level) cells: every metric is a function of cell counts."""

    def __init__(self, gt: np.ndarray, pred: np.ndarray, level: np.ndarray):
        keys = np.stack([gt, pred, level.astype(float)], axis=1)
        uniq, of = np.unique(keys, axis=0, return_inverse=True)
        self.of = of.ravel()  # cell of each item
        self.gt, self.pred, self.level = uniq[:, 0], uniq[:, 1], uniq[:, 2].astype(np.int64)
        self.size = uniq.shape[0]

    def from_indices(self, idx: np.ndarray, chunk: int = 50) -> np.ndarray:
        """(resamples, cells) counts straight from bootstrap indices, a few resamples at a time (cache-sized)."""
        B = idx.shape[0]
        out = np.empty((B, self.size), dtype=np.int32)
        of = self.of.astype(np.int32) if chunk * self.size < 2**31 else self.of
        for s in range(0, B, chunk):
            flat = of[idx[s:s + chunk]]
            k = flat.shape[0]
            flat += (np.arange(k, dtype=flat.dtype) * self.size)[:, None]
            out[s:s + k] = np.bincount(flat.ravel(), minlength=k * self.size).reshape(k, self.size)
        return out

    def from_items(self, W: np.ndarray) -> np.ndarray:
        out = np.zeros((W.shape[0], self.size), dtype=np.int64)
        order = np.argsort(self.of, kind="stable")
        starts = np.flatnonzero(np.concatenate(([True], self.of[order][1:] != self.of[order][:-1])))
        out[:, self.of[order][starts]] = np.add.reduceat(W[:, order], starts, axis=1)
        return out

    def point(self) -> np.ndarray:
        """Counts of the original sample as a single 'resample'."""
        return np.bincount(self.of, minlength=self.size)[None, :]

    def pairs_by_level(self, M: np.ndarray, margins: dict | None = None) -> dict[str, ResampledPairs]:
        return pair_counts_cells(M, self.gt, self.pred, self.level, margins)


# ---------------------------------------------------------------------------------------------
# Every metric of every resample of one run


def _group_sums(M: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(resamples, groups) sums of M over cells with equal keys (groups in key order), and each cell's group."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    change = np.concatenate(([True], k[1:] != k[:-1]))
    group = np.empty(keys.size, dtype=np.int64)
    group[order] = np.cumsum(change) - 1
    return np.add.reduceat(M[:, order], np.flatnonzero(change), axis=1), group


def _average_ranks(S: np.ndarray) -> np.ndarray:
    """Average 1-based ranks of each group of tied values, from group sizes in value order."""
    S = S.astype(float)
    return np.cumsum(S, axis=1) - S + (S + 1) / 2


def metric_resamples(cells: Cells, M: np.ndarray, predicted_level: np.ndarray, thresholds=(1, 2, 3)) -> dict[str, np.ndarray]:
    """Every severity metric of every resample, (resamples,) arrays with NaN where undefined.

    `predicted_level` is the level of each cell's prediction under the profile's boundaries.
    """
    g, p, lv = cells.gt, cells.pred, cells.level
    Mf = M.astype(float)
    N = Mf.sum(axis=1)
    err = p - g
    gm, pm = g - g.mean(), p - p.mean()
    features = [pm, gm, pm * pm, gm * gm, pm * gm, np.abs(err), err, (predicted_level == lv).astype(float)]
    for t in thresholds:
        truth, guess = lv <= t, predicted_level <= t
        features += [truth & guess, ~truth & guess, truth & ~guess, ~truth & ~guess]
    sums = Mf @ np.stack(features, axis=1).astype(float)
    sp, sg, spp, sgg, spg = (sums[:, i] for i in range(5))
    out: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        vp, vg = spp - sp * sp / N, sgg - sg * sg / N
        r = (spg - sp * sg / N) / np.sqrt(vp * vg)
        constant = (vp <= 1e-12 * np.maximum(spp, 1e-300)) | (vg <= 1e-12 * np.maximum(sgg, 1e-300))
        out["pearson"] = np.clip(np.where(constant, np.nan, r), -1, 1)
        out["mae"], out["bias"], out["level_acc"] = sums[:, 5] / N, sums[:, 6] / N, sums[:, 7] / N

        margins: dict = {}
        pairs = cells.pairs_by_level(M, margins)
        gp_, gg_ = _dense_rank(p), _dense_rank(g)
        Sp = margins["pred"] if "pred" in margins else _group_sums(M, gp_)[0]
        Sg = margins["gt"] if "gt" in margins else _group_sums(M, gg_)[0]
        rp, rg = _average_ranks(Sp), _average_ranks(Sg)
        mean = (N + 1) / 2
        dp, dg = rp - mean[:, None], rg - mean[:, None]
        sxx = (Sp * dp * dp).sum(axis=1)
        syy = (Sg * dg * dg).sum(axis=1)
        sxy = (Mf * dp[:, gp_] * dg[:, gg_]).sum(axis=1)
        rho = sxy / np.sqrt(sxx * syy)
        out["spearman"] = np.clip(np.where((sxx <= 1e-9) | (syy <= 1e-9), np.nan, rho), -1, 1)

    for name, k in (("pairwise", "all"), ("inter", "inter"), ("intra", "intra")):
        out[f"{name}_acc"] = pairs[k].accuracy()
        out[f"{name}_acc_strict"] = pairs[k].strict_accuracy()
        out[f"{name}_ties"] = pairs[k].tie_share()
    for i, t in enumerate(thresholds):
        base = 8 + 4 * i
        out[f"binary_{t}"] = {k: sums[:, base + j] for j, k in enumerate(("tp", "fp", "fn", "tn"))}
    out["_pairs"] = pairs
    return out
