"""Vectorised bootstrap kernels: every metric of every resample at once, from one index draw.

A bootstrap resample of n images is described by its multiplicities: `W[b, i]` = how many times
image i was drawn in resample b (each row sums to n). Every metric of a resample is a function of
the original arrays weighted by W, so the resampled arrays are never materialised and no Python
loop runs over resamples. Indices are drawn once per run (`draw`) and reused by every metric, so
intervals of different metrics (and of two runs in a paired comparison) come from the same images.

The pairwise counts follow the definitions in scoring.metrics exactly (pairs of *positions* in the
resample, so two copies of one image form a pair tied in the ground truth, which is not counted):
- tie counts per ground-truth group, prediction group and joint group come from sums of W per group;
- concordant pairs come from one sweep over the prediction values (PairPlan): a cumulative sum over
  the ground-truth rows per prediction value, for all resamples of a chunk at once. Data with many
  distinct values over few cells use a weighted merge-sort sweep instead (_MergePlan): O(cells log
  cells) per resample whatever the number of distinct values; its index arithmetic, orders and
  groups depend only on the data, so they are computed once per run and applied to every chunk.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def draw(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) bootstrap indices: the single draw every metric of a run reuses."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int32 if n < 2**31 else np.int64)


def multiplicities(idx: np.ndarray, n: int, of: np.ndarray | None = None) -> np.ndarray:
    """(resamples, n) counts W[b, i]: how many times bin i is drawn in resample b of `idx`, where item j
    falls in bin of[j] (default: its own bin, so n is the number of items)."""
    k = idx.shape[0]
    flat = idx.astype(np.intp) if of is None else of[idx]  # a fresh array in bincount's index type, offset in place
    flat += (np.arange(k, dtype=np.intp) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=k * n).reshape(k, n)


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
            self.levels.append((left[lorder], right, a, None if np.array_equal(a, b) else b, start, end))
            size *= 2

    def signed_sum(self, WT: np.ndarray) -> np.ndarray:
        """Per resample: sum over position pairs l < k (in this order) of sign(rank_k - rank_l).

        `WT` is (items, resamples) int64: every gather below takes whole rows (contiguous), which is
        what keeps the sweep fast with one item per cell (continuous scores)."""
        B = WT.shape[1]
        total = np.zeros(B, dtype=np.int64)
        for left_sorted, right, a, b, start, end in self.levels:
            cw = np.empty((left_sorted.size + 1, B), dtype=np.int64)
            cw[0] = 0
            np.cumsum(WT[left_sorted], axis=0, out=cw[1:])
            diff = cw[a]
            if b is None:  # no prediction tied across the halves (continuous scores): cw[b] is cw[a]
                diff += diff
            else:
                diff += cw[b]
            diff -= cw[start]
            diff -= cw[end]  # (less) - (greater)
            total += np.einsum("ij,ij->j", WT[right], diff)
        return total


def _dense_rank(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1].ravel()


# The column sweep takes rows x columns steps per resample, the merge-sort sweep about
# cells x log2(cells) steps that each cost ~20 times more (bench/metrics.py's run with scores of
# 2, 3 and 4 decimals): the column sweep is used while it is the cheaper one.
SWEEP_RATIO = 16


def _rows(gt: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, bool]:
    """Row of each cell: distinct (gt, level) sorted by gt, then level descending; and whether
    every level's rows are contiguous in that order (so one sweep serves the intra-level count)."""
    keys = np.stack([gt, -level.astype(float)], axis=1)
    uniq, row = np.unique(keys, axis=0, return_inverse=True)
    lv = -uniq[:, 1]
    runs = lv[np.concatenate(([True], lv[1:] != lv[:-1]))]
    return row.ravel(), np.unique(runs).size == runs.size


def _choose2(x: np.ndarray) -> np.ndarray:
    """Per resample: sum of x(x-1)/2 over groups, x (groups, resamples)."""
    x = x.astype(np.int64, copy=False)
    return (x * (x - 1)).sum(axis=0) // 2  # every term is even


def _run_starts(keys: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))


class PairPlan:
    """Everything about the pair counts of one set of cells that does not depend on the resample.

    Rows are the distinct (gt, level) sorted by gt, then level descending; columns the prediction
    values. Concordant pairs are counted by one sweep over the columns in prediction order: before
    a column's cells are added, the running per-row counts of the earlier columns are cumulated over
    the rows (one cumulative sum of a (rows, resamples) array per column), so at a cell the count of
    positions with a strictly lower prediction and a strictly lower ground truth is one lookup (the
    rows before the first row of its gt value), and its intra-level count is the same lookup minus
    the rows before its level's block. Ties and pair totals are group sums of the same counts.
    Levels whose rows are not contiguous in gt order (published levels that disagree with the
    scores), or many rows and columns over few cells (SWEEP_RATIO), use the merge-sort sweep instead.
    """

    def __init__(self, gt: np.ndarray, pred: np.ndarray, level: np.ndarray):
        self.gt, self.pred, self.level = gt, pred, np.asarray(level)
        self.size = gt.size
        self._merge: _MergePlan | None = None
        if gt.size == 0:
            self.sweep = False
            return
        row, contiguous = _rows(gt, self.level)
        pr = _dense_rank(pred)
        R, P = int(row.max()) + 1, int(pr.max()) + 1
        self.row, self.R, self.P = row, R, P
        self.sweep = contiguous and R * P <= SWEEP_RATIO * gt.size * max(np.log2(gt.size), 1)
        self.cross = _SameGtOtherLevel(gt, pred, row)
        if not self.sweep:
            return
        row_gt = np.empty(R)
        row_gt[row] = gt
        row_level = np.empty(R, dtype=self.level.dtype)
        row_level[row] = self.level
        first_of_gt = np.searchsorted(row_gt, gt, "left")  # rows before the first row of the cell's gt value
        self.level_starts = _run_starts(row_level)  # contiguous blocks, one per level
        block_start = self.level_starts[np.searchsorted(self.level_starts, row, "right") - 1]
        order = np.lexsort((row, pr))  # by column, then row
        self.order = order
        self.rows1 = row[order] + 1
        self.q = first_of_gt[order]
        self.b = block_start[order]
        self.before_block = self.q < self.b
        cols = _run_starts(pr[order])
        ends = np.append(cols[1:], order.size)
        self.columns = [(int(s), int(e), int(max(self.q[s:e].max(), self.b[s:e].max())) + 1) for s, e in zip(cols, ends)]
        self.gt_starts = _run_starts(row_gt)  # rows of one gt value are adjacent
        pl = pr[order] * (int(self.level.max()) + 1) + self.level[order]
        self.pl_starts = _run_starts(pl)  # (column, level) runs in the sweep order
        self.pred_of_pl = _run_starts(pr[order][self.pl_starts])

    def counts(self, M: np.ndarray, margins: dict | None = None) -> dict[str, ResampledPairs]:
        B = M.shape[0]
        z = np.zeros(B, dtype=np.int64)
        if self.size == 0:
            empty = ResampledPairs(z, z, z, z)
            return {"all": empty, "intra": empty, "inter": empty}
        # position pairs within one cell (copies of one image, or equal cells): sum of M(M-1)/2
        jt = (np.einsum("ij,ij->i", M, M, dtype=np.int64) - M.sum(axis=1, dtype=np.int64)) // 2
        jt_gp = jt + self.cross.equal_pred(M)
        if not self.sweep:
            return self._fallback(M.astype(np.int64), jt, jt_gp, margins)
        MT = np.ascontiguousarray(M[:, self.order].T, dtype=np.int32)  # (cells in sweep order, resamples)
        G = np.zeros((self.R + 1, B), dtype=np.int32)  # G[r + 1]: positions in row r of the columns swept
        H = np.empty_like(G)
        below_gt = np.zeros_like(MT)  # positions with a lower prediction and a lower gt
        below_block = np.zeros_like(MT)  # positions with a lower prediction in the levels before the cell's
        for j, (s, e, top) in enumerate(self.columns):
            if j:
                np.cumsum(G[:top], axis=0, out=H[:top])  # H[i]: positions in rows < i
                np.take(H, self.q[s:e], axis=0, out=below_gt[s:e], mode="clip")
                np.take(H, self.b[s:e], axis=0, out=below_block[s:e], mode="clip")
            G[self.rows1[s:e]] += MT[s:e]
        conc = np.einsum("ij,ij->j", MT, below_gt, dtype=np.int64)
        below_gt -= below_block
        below_gt[self.before_block] = 0  # the cell's gt value starts in an earlier level: none in its own
        conc_i = np.einsum("ij,ij->j", MT, below_gt, dtype=np.int64)
        row_total = G[1:].astype(np.int64)
        gt_total = np.add.reduceat(row_total, self.gt_starts, axis=0)
        level_total = np.add.reduceat(row_total, self.level_starts, axis=0)
        column_level = np.add.reduceat(MT, self.pl_starts, axis=0)  # int32: each sum is at most the resample size
        pred_total = np.add.reduceat(column_level, self.pred_of_pl, axis=0)
        if margins is not None:  # group sizes per prediction value and per gt value, for Spearman's ranks
            margins["pred"], margins["gt"] = pred_total.T, gt_total.T
        N = row_total.sum(axis=0)
        xt, xt_row, yt, yt_lv = _choose2(gt_total), _choose2(row_total), _choose2(pred_total), _choose2(column_level)
        pairs, ties = N * (N - 1) // 2 - xt, yt - jt_gp
        pairs_i, ties_i = _choose2(level_total) - xt_row, yt_lv - jt
        total = ResampledPairs(pairs, conc, pairs - ties - conc, ties)
        intra = ResampledPairs(pairs_i, conc_i, pairs_i - ties_i - conc_i, ties_i)
        return {"all": total, "intra": intra, "inter": total - intra}

    def _fallback(self, M64, jt, jt_gp, margins) -> dict[str, ResampledPairs]:
        if self._merge is None:
            self._merge = _MergePlan(self.gt, self.pred, self.level, self.row)
        return self._merge.counts(M64, jt, jt_gp, margins)


class _Groups:
    """Cells grouped by equal keys, the grouping computed once and applied to every chunk of resamples.

    With continuous scores almost every group is one cell: tie counts then come from the pairs of
    copies of one cell (`jt`, known already) plus an excess over the few groups of several cells,
    and group sums from one cumulative sum, so the cost does not depend on the number of groups."""

    def __init__(self, keys: np.ndarray, cells: np.ndarray | None = None):
        order = np.argsort(keys, kind="stable")
        starts = _run_starts(keys[order])
        self.ends = np.append(starts[1:], order.size) - 1  # last position of each group in `order`
        cells = np.arange(keys.size) if cells is None else cells
        self.order = cells[order]  # cells in group order
        sizes = np.diff(np.append(starts, order.size))
        in_multi = np.repeat(sizes > 1, sizes)
        self.multi = self.order[in_multi]  # cells of groups with several cells, in group order
        multi_sizes = sizes[sizes > 1]
        self.multi_starts = np.concatenate(([0], np.cumsum(multi_sizes)[:-1])) if multi_sizes.size else multi_sizes

    def sums(self, MT: np.ndarray) -> np.ndarray:
        """(groups, resamples) sums of MT (cells, resamples) over each group."""
        cs = np.cumsum(MT[self.order], axis=0)
        out = cs[self.ends]
        out[1:] -= cs[self.ends[:-1]]
        return out

    def excess(self, MT: np.ndarray) -> np.ndarray:
        """Per resample: position pairs in different cells of one group."""
        if not self.multi.size:
            return np.zeros(MT.shape[1], dtype=np.int64)
        W = MT[self.multi]
        return _choose2(np.add.reduceat(W, self.multi_starts, axis=0)) - _choose2(W)


class _MergePlan:
    """The merge-sort counting of PairPlan's fallback, with everything that does not depend on the
    resample (orders, groups, sweep plans) computed once per run, not once per chunk of resamples.

    Concordant - discordant comes from a weighted merge-sort sweep over the cells in (gt, pred)
    order, for all cells and per level: O(cells log cells) per resample whatever the number of
    distinct values, on (cells, resamples) arrays whose gathers take whole rows."""

    def __init__(self, gt, pred, lv, row):
        pr = _dense_rank(pred)
        P = int(pr.max()) + 1
        self.gt_groups, self.pred_groups = _Groups(_dense_rank(gt)), _Groups(pr)
        self.row_groups, self.level_pred_groups = _Groups(row), _Groups(_dense_rank(lv) * P + pr)
        self.levels = [np.flatnonzero(lv == v) for v in np.unique(lv)]
        self.signed_plans = [self._signed_plan(gt, pred, np.arange(gt.size))] + [self._signed_plan(gt, pred, c) for c in self.levels]

    @staticmethod
    def _signed_plan(gt, pred, cols):
        order = cols[np.lexsort((pred[cols], gt[cols]))]
        g_o, p_o = _dense_rank(gt[order]), _dense_rank(pred[order])
        # Same-gt pairs are counted +1 by the sweep when their predictions differ (sorted by pred within gt).
        return order, _Sweep(p_o), _Groups(g_o, order), _Groups(g_o * (pred.size + 1) + p_o, order)

    def counts(self, M64, jt, jt_gp, margins: dict | None = None) -> dict[str, ResampledPairs]:
        MT = np.ascontiguousarray(M64.T)  # (cells, resamples)
        N = MT.sum(axis=0)
        if margins is not None:  # group sizes per prediction value and per gt value, for Spearman's ranks
            margins["pred"], margins["gt"] = self.pred_groups.sums(MT).T, self.gt_groups.sums(MT).T
        # Tied position pairs: copies of one cell (jt) plus pairs of different cells in one group.
        xt, yt = jt + self.gt_groups.excess(MT), jt + self.pred_groups.excess(MT)
        xt_row, yt_lv = jt + self.row_groups.excess(MT), jt + self.level_pred_groups.excess(MT)
        Nl = np.stack([MT[cols].sum(axis=0) for cols in self.levels], axis=0)
        pairs, ties = N * (N - 1) // 2 - xt, yt - jt_gp
        pairs_i, ties_i = _choose2(Nl) - xt_row, yt_lv - jt
        signed = [sweep.signed_sum(MT[order]) - (same_gt.excess(MT) - same_cell.excess(MT))
                  for order, sweep, same_gt, same_cell in self.signed_plans]
        conc = (pairs - ties + signed[0]) // 2
        conc_i = (pairs_i - ties_i + sum(signed[1:])) // 2
        total = ResampledPairs(pairs, conc, pairs - ties - conc, ties)
        intra = ResampledPairs(pairs_i, conc_i, pairs_i - ties_i - conc_i, ties_i)
        return {"all": total, "intra": intra, "inter": total - intra}


class _SameGtOtherLevel:
    """Position pairs in different rows (levels) of one gt value with equal predictions: the shared
    boundary scores, a handful of cells."""

    def __init__(self, gt, pred, row):
        self.parts = []
        values, counts = np.unique(gt, return_counts=True)
        for value in values[counts > 1]:
            cols = np.flatnonzero(gt == value)
            r = row[cols]
            if np.unique(r).size < 2:
                continue
            pc = pred[cols]
            equal = (r[:, None] < r[None, :]) & (pc[:, None] == pc[None, :])
            if equal.any():
                self.parts.append((cols, equal.astype(np.int64)))

    def equal_pred(self, M: np.ndarray) -> np.ndarray:
        out = np.zeros(M.shape[0], dtype=np.int64)
        for cols, equal in self.parts:
            Mc = M[:, cols].astype(np.int64)
            out += np.einsum("bi,ij,bj->b", Mc, equal, Mc)
        return out


class Cells:
    """Items merged into distinct (gt, pred, level) cells: every metric is a function of cell counts."""

    def __init__(self, gt: np.ndarray, pred: np.ndarray, level: np.ndarray):
        keys = np.stack([gt, pred, level.astype(float)], axis=1)
        uniq, of = np.unique(keys, axis=0, return_inverse=True)
        self.of = of.ravel().astype(np.intp, copy=False)  # cell of each item (bincount's index type)
        self.gt, self.pred, self.level = uniq[:, 0], uniq[:, 1], uniq[:, 2].astype(np.int64)
        self.size = uniq.shape[0]
        self._plan = None

    def from_indices(self, idx: np.ndarray, chunk: int = 50) -> np.ndarray:
        """(resamples, cells) counts straight from bootstrap indices, a few resamples at a time (cache-sized)."""
        B = idx.shape[0]
        out = np.empty((B, self.size), dtype=np.int32)
        for s in range(0, B, chunk):
            block = idx[s:s + chunk]
            out[s:s + block.shape[0]] = multiplicities(block, self.size, of=self.of)
        return out

    @property
    def plan(self) -> PairPlan:
        if self._plan is None:
            self._plan = PairPlan(self.gt, self.pred, self.level)
        return self._plan

    def pairs_by_level(self, M: np.ndarray, margins: dict | None = None) -> dict[str, ResampledPairs]:
        return self.plan.counts(M, margins)


# ---------------------------------------------------------------------------------------------
# Every metric of every resample of one run

RESAMPLE_CHUNK = 50  # resamples computed together: every temporary of a chunk stays in the CPU cache


def _group_sums(M: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(resamples, groups) sums of M over cells with equal keys (groups in key order)."""
    order = np.argsort(keys, kind="stable")
    return np.add.reduceat(M[:, order], _run_starts(keys[order]), axis=1)


def _average_ranks(S: np.ndarray) -> np.ndarray:
    """Average 1-based ranks of each group of tied values, from group sizes in value order."""
    S = S.astype(float)
    return np.cumsum(S, axis=1) - S + (S + 1) / 2


def metric_resamples(cells: Cells, idx: np.ndarray, predicted_level: np.ndarray, thresholds=(1, 2, 3)) -> dict[str, np.ndarray]:
    """Every severity metric of every resample given by bootstrap indices `idx` (resamples, items),
    as (resamples,) arrays with NaN where undefined; binary_T entries are dicts of tp/fp/fn/tn counts.

    `predicted_level` is the level of each cell's prediction under the profile's boundaries. The
    resamples are taken RESAMPLE_CHUNK at a time; the results do not depend on the chunk size.
    """
    g, p, lv = cells.gt, cells.pred, cells.level
    err = p - g
    gm, pm = g - g.mean(), p - p.mean()
    features = [pm, gm, pm * pm, gm * gm, pm * gm, np.abs(err), err, (predicted_level == lv).astype(float)]
    for t in thresholds:
        truth, guess = lv <= t, predicted_level <= t
        features += [truth & guess, ~truth & guess, truth & ~guess, ~truth & ~guess]
    features = np.stack(features, axis=1).astype(float)
    ranks = _dense_rank(p), _dense_rank(g)
    parts = [_chunk_metrics(cells, cells.from_indices(idx[s:s + RESAMPLE_CHUNK]), features, ranks, thresholds)
             for s in range(0, idx.shape[0], RESAMPLE_CHUNK)]
    if not parts:
        parts = [_chunk_metrics(cells, np.zeros((0, cells.size), dtype=np.int32), features, ranks, thresholds)]
    out: dict = {}
    for key, value in parts[0].items():
        if isinstance(value, dict):
            out[key] = {k: np.concatenate([part[key][k] for part in parts]) for k in value}
        else:
            out[key] = np.concatenate([part[key] for part in parts])
    return out


def _chunk_metrics(cells: Cells, M: np.ndarray, features: np.ndarray, ranks, thresholds) -> dict:
    Mf = M.astype(float)
    N = Mf.sum(axis=1)
    sums = Mf @ features
    sp, sg, spp, sgg, spg = (sums[:, i] for i in range(5))
    out: dict = {}
    with np.errstate(all="ignore"):
        vp, vg = spp - sp * sp / N, sgg - sg * sg / N
        r = (spg - sp * sg / N) / np.sqrt(vp * vg)
        constant = (vp <= 1e-12 * np.maximum(spp, 1e-300)) | (vg <= 1e-12 * np.maximum(sgg, 1e-300))
        out["pearson"] = np.clip(np.where(constant, np.nan, r), -1, 1)
        out["mae"], out["bias"], out["level_acc"] = sums[:, 5] / N, sums[:, 6] / N, sums[:, 7] / N

        margins: dict = {}
        pairs = cells.pairs_by_level(M, margins)
        gp_, gg_ = ranks
        Sp = margins["pred"] if "pred" in margins else _group_sums(M, gp_)
        Sg = margins["gt"] if "gt" in margins else _group_sums(M, gg_)
        rp, rg = _average_ranks(Sp), _average_ranks(Sg)
        mean = (N + 1) / 2
        dp, dg = rp - mean[:, None], rg - mean[:, None]
        sxx = (Sp * dp * dp).sum(axis=1)
        syy = (Sg * dg * dg).sum(axis=1)
        sxy = np.einsum("ij,ij,ij->i", Mf, np.take(dp, gp_, axis=1), np.take(dg, gg_, axis=1))
        rho = sxy / np.sqrt(sxx * syy)
        out["spearman"] = np.clip(np.where((sxx <= 1e-9) | (syy <= 1e-9), np.nan, rho), -1, 1)

    for name, k in (("pairwise", "all"), ("inter", "inter"), ("intra", "intra")):
        out[f"{name}_acc"] = pairs[k].accuracy()
        out[f"{name}_acc_strict"] = pairs[k].strict_accuracy()
        out[f"{name}_ties"] = pairs[k].tie_share()
    for i, t in enumerate(thresholds):
        base = 8 + 4 * i
        out[f"binary_{t}"] = {k: sums[:, base + j] for j, k in enumerate(("tp", "fp", "fn", "tn"))}
    return out
