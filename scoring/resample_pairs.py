"""Per-resample pair counts (scoring.resample's pairwise kernels): concordant, discordant and tied pairs
of every bootstrap resample at once, overall, between levels and within levels, from cell counts.

The counts follow the definitions in scoring.metrics exactly (pairs of *positions* in the resample, so
two copies of one image form a pair tied in the ground truth, which is not counted):
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

from .count_sums import BlockScan, Workspace, column_dots, group_matrix, scratch, transposed


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
    """The index plan of a weighted merge-sort sweep for one fixed order of items (see module doc), whose leaves
    are the groups of equal ground truth (`group`, non-decreasing along the order): a pair within one group
    is never compared, so the sweep counts exactly the pairs with different gt, and its depth is log2 of
    the number of gt values, not of the items."""

    def __init__(self, rank: np.ndarray, group: np.ndarray, rows: np.ndarray, items: np.ndarray,
                 first: int = 1, stop: int | None = None):
        """Merges of block sizes first, 2 first, ... below `stop` (powers of two): only the pairs whose
        groups first share a block of 2 x such a size are counted. Item i of the order is row items[i]
        of the counts given to signed_sum, so no gather of the items comes first, and lies in row
        rows[i] of the (gt, level) rows; every leaf holds whole rows, so a block's total count is a sum
        of row totals (signed_sum's `row_total`)."""
        n = rank.size
        P = int(rank.max()) + 1 if n else 1
        self.leaves = G = int(group.max()) + 1 if n else 1
        width = int(rows.max()) + 1 if n else 1
        pairs = np.unique(group.astype(np.int64) * width + rows)  # the rows of each leaf
        leaf = pairs // width
        self.leaf_starts = run_starts(leaf)
        self.leaf_ids, self.leaf_rows = leaf[self.leaf_starts], pairs % width
        G = G if stop is None else min(G, stop)
        # Blocks and halves by shifts of int32 leaf numbers (sizes are powers of two): an int64 division
        # per item and level cost more than the rest of this plan's masks
        group = group.astype(np.int32 if self.leaves < 2**31 else np.int64)
        self.levels = []
        size = first
        while size < G:
            shift = size.bit_length() - 1  # size = 2**shift
            blk = group >> (shift + 1)
            side = (group >> shift) & 1
            right = np.flatnonzero(side == 1)
            paired = np.zeros(int(blk.max()) + 1 if n else 0, dtype=bool)  # blocks with a right half
            paired[blk[right]] = True
            left = np.flatnonzero((side == 0) & paired[blk])  # blocks without a right half: no pair
            lkeys = blk[left].astype(np.int64) * P + rank[left]
            lorder = np.argsort(lkeys, kind="stable")
            K = lkeys[lorder]
            rk = blk[right].astype(np.int64) * P + rank[right]
            a = np.searchsorted(K, rk, "left")
            b = a.copy()  # past a only where the left half holds rk itself: few items with continuous scores
            tie = a < K.size
            tie[tie] = K[a[tie]] == rk[tie]
            b[tie] = np.searchsorted(K, rk[tie], "right")
            blocks = np.flatnonzero(paired)  # each with its left half's bounds in K and its right half's leaves
            start, end = np.searchsorted(K, blocks * P, "left"), np.searchsorted(K, (blocks + 1) * P, "left")
            lo, hi = blocks * 2 * size + size, np.minimum((blocks + 1) * 2 * size, self.leaves)
            scan = BlockScan(items[left[lorder]])  # positions in K become rows of the scan's sums
            tied = np.flatnonzero(a != b)  # right items with equal ranks in the left half
            if 2 * tied.size > right.size:  # mostly ties (few distinct values): cw[b] for every item
                full_b, ties = scan.at(b), None
            else:  # few ties (continuous scores): 2 cw[a] for every item, cw[b] - cw[a] for the tied ones
                full_b = None
                ties = (items[right[tied]], scan.at(a[tied]), scan.at(b[tied])) if tied.size else None
            self.levels.append((scan, items[right], scan.at(a), full_b, ties, scan.at(start), scan.at(end), lo, hi))
            size *= 2

    def signed_sum(self, MT: np.ndarray, row_total: np.ndarray, bound: np.ndarray, work: Workspace | None = None) -> np.ndarray:
        """Per resample: sum over position pairs l < k (in this order) of sign(rank_k - rank_l).

        `MT` is (rows, resamples) non-negative counts, int32 while a count times twice a resample's
        size fits (else int64): every gather below takes whole rows (np.take along axis 0, a few
        times faster than fancy indexing), which is what keeps the sweep fast with one item per
        cell (continuous scores). `bound[i]` bounds row i of MT times a resample's size, so that the
        sums may run in int32 a while (count_sums.column_dots).

        For a right item k of a block, (less) - (greater) = cw[a] + cw[b] - cw[start] - cw[end] over
        the running sums cw of the block's left half. The last two terms are the block's: they are
        weighted by the block's right total (a difference of running sums over the leaves' totals)
        rather than gathered per item. With few ties across the halves (continuous scores) cw[a] + cw[b]
        is taken as 2 cw[a] plus, for the few tied items only, cw[b] - cw[a]: one gather of whole
        rows of cw fewer, the same integers. `work`: where the level's scratch arrays are kept (count_sums.Workspace)."""
        B = MT.shape[1]
        leaf_total = np.zeros((self.leaves, B), dtype=np.int64)
        if self.leaf_rows.size:
            leaf_total[self.leaf_ids] = np.add.reduceat(np.take(row_total, self.leaf_rows, axis=0), self.leaf_starts,
                                                        axis=0, dtype=np.int64)
        leaf_sums = np.zeros((self.leaves + 1, B), dtype=np.int64)
        np.cumsum(leaf_total, axis=0, out=leaf_sums[1:])
        total = np.zeros(B, dtype=np.int64)
        for scan, right, a, b, ties, start, end, lo, hi in self.levels:
            cw = scan.sums(MT, work)  # running sums of the blocks' left halves (a, b, start, end: rows of cw)
            # "clip": take writes straight into `out` (the indices are valid), where "raise" would buffer
            diff = np.take(cw, a, axis=0, out=scratch(work, "diff", (a.size, B), cw.dtype), mode="clip")
            factor = scratch(work, "factor", (right.size, B), MT.dtype)
            if b is not None:
                diff += np.take(cw, b, axis=0, out=factor, mode="clip")
            factor = np.take(MT, right, axis=0, out=factor, mode="clip")
            if b is None:  # cw[a]: at most a resample's size
                total += 2 * column_dots(diff, factor, np.take(bound, right))
            else:
                total += column_dots(diff, factor, 2 * np.take(bound, right))
            if ties is not None:
                tied, ta, tb = ties
                extra = np.take(cw, tb, axis=0)
                extra -= np.take(cw, ta, axis=0)  # positions tied with the item: at most a resample's size
                total += column_dots(extra, np.take(MT, tied, axis=0), np.take(bound, tied))
            bounds = np.take(cw, start, axis=0).astype(np.int64)
            bounds += np.take(cw, end, axis=0)
            bounds *= leaf_sums[hi] - leaf_sums[lo]
            total -= bounds.sum(axis=0)
        return total


def dense_rank(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1].ravel()


# The column sweep takes rows x columns steps per resample, the merge-sort sweep about
# cells x log2(cells) steps that each cost ~20 times more (bench/metrics.py's run with scores of
# 2, 3 and 4 decimals): the column sweep is used while it is the cheaper one.
SWEEP_RATIO = 16


def _rows(gt_rank: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, bool]:
    """Row of each cell, from its dense rank of gt: distinct (gt, level) sorted by gt, then level
    descending; and whether every level's rows are contiguous in that order (so one sweep serves the
    intra-level count)."""
    level = np.asarray(level, dtype=np.int64)
    top, span = int(level.max()), int(level.max() - level.min()) + 1
    # One integer key in that order (np.unique along axis 0 sorts rows as records, several times slower)
    uniq, row = np.unique(gt_rank * span + (top - level), return_inverse=True)
    lv = top - uniq % span
    runs = lv[np.concatenate(([True], lv[1:] != lv[:-1]))]
    return row.ravel(), np.unique(runs).size == runs.size


def _choose2(x: np.ndarray) -> np.ndarray:
    """Per resample: sum of x(x-1)/2 over groups, x (groups, resamples)."""
    x = x.astype(np.int64, copy=False)
    return (x * (x - 1)).sum(axis=0) // 2  # every term is even


def run_starts(keys: np.ndarray) -> np.ndarray:
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

    def __init__(self, gt: np.ndarray, pred: np.ndarray, level: np.ndarray,
                 ranks: tuple[np.ndarray, np.ndarray] | None = None):
        """`ranks`: the dense ranks of pred and gt, where the caller has them already."""
        self.gt, self.pred, self.level = gt, pred, np.asarray(level)
        self.size = gt.size
        self._merge: _MergePlan | None = None
        if gt.size == 0:
            self.sweep = False
            return
        pr, gr = (dense_rank(pred), dense_rank(gt)) if ranks is None else ranks
        self.pred_rank = pr
        row, contiguous = _rows(gr, self.level)
        self.contiguous = contiguous
        R, P = int(row.max()) + 1, int(pr.max()) + 1
        self.row, self.R, self.P = row, R, P
        self.sweep = contiguous and R * P <= SWEEP_RATIO * gt.size * max(np.log2(gt.size), 1)
        self.cross = _SameGtOtherLevel(gr, pr)
        if not self.sweep:
            return
        row_gt = np.empty(R)
        row_gt[row] = gt
        row_level = np.empty(R, dtype=self.level.dtype)
        row_level[row] = self.level
        first_of_gt = np.searchsorted(row_gt, gt, "left")  # rows before the first row of the cell's gt value
        self.level_starts = run_starts(row_level)  # contiguous blocks, one per level
        block_start = self.level_starts[np.searchsorted(self.level_starts, row, "right") - 1]
        order = np.lexsort((row, pr))  # by column, then row
        self.order = order
        self.rows1 = row[order] + 1
        self.q = first_of_gt[order]
        self.b = block_start[order]
        self.before_block = self.q < self.b
        cols = run_starts(pr[order])
        ends = np.append(cols[1:], order.size)
        self.columns = [(int(s), int(e), int(max(self.q[s:e].max(), self.b[s:e].max())) + 1) for s, e in zip(cols, ends)]
        self.gt_starts = run_starts(row_gt)  # rows of one gt value are adjacent
        pl = pr[order] * (int(self.level.max()) + 1) + self.level[order]
        self.pl_starts = run_starts(pl)  # (column, level) runs in the sweep order
        self.pred_of_pl = run_starts(pr[order][self.pl_starts])

    def counts(self, M: np.ndarray, margins: dict | None = None, work: Workspace | None = None) -> dict[str, ResampledPairs]:
        """The pair counts of every resample of M (resamples, cells); `margins` receives the group sizes
        (and the merge sort's transposed counts), `work` keeps scratch arrays across chunks."""
        B = M.shape[0]
        z = np.zeros(B, dtype=np.int64)
        if self.size == 0:
            empty = ResampledPairs(z, z, z, z)
            return {"all": empty, "intra": empty, "inter": empty}
        # position pairs within one cell (copies of one image, or equal cells): sum of M(M-1)/2
        N = M.sum(axis=1, dtype=M.dtype).astype(np.int64)  # each row sums to its resample's size
        most = int(M.max(initial=0)) * int(N.max(initial=0))  # a count times a resample's size: >= sum of M**2
        squares = np.einsum("ij,ij->i", M, M) if most < 2**31 else np.einsum("ij,ij->i", M, M, dtype=np.int64)
        jt = (squares.astype(np.int64) - N) // 2
        jt_gp = jt + self.cross.equal_pred(M)
        if not self.sweep:
            return self._fallback(M, N, most, jt, jt_gp, margins, work)
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

    def _fallback(self, M, N, most, jt, jt_gp, margins, work) -> dict[str, ResampledPairs]:
        if self._merge is None:
            self._merge = _MergePlan(self.gt, self.pred, self.level, self.row, self.contiguous, self.pred_rank)
        return self._merge.counts(M, N, most, jt, jt_gp, margins, work)


class _Groups:
    """Cells grouped by equal keys, the grouping computed once and applied to every chunk of resamples.

    With continuous scores almost every group is one cell: tie counts then come from the pairs of
    copies of one cell (`jt`, known already) plus an excess over the few groups of several cells,
    and group sums are the one cell's counts except in those few groups."""

    def __init__(self, keys: np.ndarray):
        order = np.argsort(keys, kind="stable")
        starts = run_starts(keys[order])
        self.first = order[starts]  # first cell of each group
        sizes = np.diff(np.append(starts, order.size))
        self.multi_groups = np.flatnonzero(sizes > 1)
        in_multi = np.repeat(sizes > 1, sizes)
        self.multi = order[in_multi]  # cells of groups with several cells, in group order
        multi_sizes = sizes[sizes > 1]
        self.multi_starts = np.concatenate(([0], np.cumsum(multi_sizes)[:-1])) if multi_sizes.size else multi_sizes

    def sums(self, MT: np.ndarray, work: Workspace | None = None) -> np.ndarray:
        """(groups, resamples) sums of MT (cells, resamples) over each group (in `work`'s "groups" array)."""
        out = np.take(MT, self.first, axis=0, out=scratch(work, "groups", (self.first.size, MT.shape[1]), MT.dtype), mode="clip")
        if self.multi.size:
            out[self.multi_groups] = np.add.reduceat(np.take(MT, self.multi, axis=0), self.multi_starts, axis=0)
        return out

    def excess(self, MT: np.ndarray) -> np.ndarray:
        """Per resample: position pairs in different cells of one group."""
        if not self.multi.size:
            return np.zeros(MT.shape[1], dtype=np.int64)
        W = np.take(MT, self.multi, axis=0)
        return _choose2(np.add.reduceat(W, self.multi_starts, axis=0)) - _choose2(W)


class _MergePlan:
    """The merge-sort counting of PairPlan's fallback, with everything that does not depend on the
    resample (orders, groups, sweep plans) computed once per run, not once per chunk of resamples.

    Concordant - discordant comes from weighted merge-sort sweeps (O(cells log cells) per resample
    whatever the number of distinct values, on (cells, resamples) arrays whose gathers take whole
    rows). Each plan is (sweep over rows of those arrays, weight in the overall sum, weight in the intra-level sum)."""

    def __init__(self, gt, pred, lv, row, contiguous: bool, pr: np.ndarray):
        """`pr`: the dense rank of pred."""
        P = int(pr.max()) + 1
        self.pred_groups, self.level_pred_groups = _Groups(pr), _Groups(dense_rank(lv) * P + pr)
        self.levels = [np.flatnonzero(lv == v) for v in np.unique(lv)]
        # Rows (distinct gt, level) in gt order: their sums give the gt and level sums and tie counts.
        self.row_sums = group_matrix(row)
        R = int(row.max()) + 1
        row_gt, row_level = np.empty(R), np.empty(R, dtype=lv.dtype)
        row_gt[row], row_level[row] = gt, lv
        self.gt_starts = run_starts(row_gt)
        self.level_rows = [np.flatnonzero(row_level == v) for v in np.unique(lv)]
        if contiguous:
            self.plans = self._nested_plans(gt, pr, lv, row)
        else:  # one sweep over all cells and one per level, each with the gt values as leaves
            self.plans = [(self._signed_plan(gt, pred, row, np.arange(gt.size)), 1, 0)]
            self.plans += [(self._signed_plan(gt, pred, row, c), 0, 1) for c in self.levels]

    @staticmethod
    def _signed_plan(gt, pred, row, cols):
        order = cols[np.lexsort((pred[cols], gt[cols]))]
        g_o, p_o = dense_rank(gt[order]), dense_rank(pred[order])
        # The sweep's leaves are the gt values: pairs with one gt value are never compared.
        return _Sweep(p_o, g_o, row[order], order)

    @staticmethod
    def _nested_plans(gt, pr, lv, row):
        """Levels whose rows are contiguous in gt order: the leaves are the rows, numbered so that each
        level is one aligned block of leaves. The merges inside the blocks give the intra-level sum, the
        few merges between blocks (depth log2 of the levels) the rest of the overall sum, so the overall
        count costs no sweep of its own. Pairs of one gt value in two levels (rows sharing a boundary
        gt value) are compared between blocks but tied in the gt: a sweep over those cells takes them off."""
        order = np.lexsort((pr, row))
        r, p = row[order], pr[order]
        R = int(r.max()) + 1
        row_level, row_gt = np.empty(R, dtype=lv.dtype), np.empty(R)
        row_level[row], row_gt[row] = lv, gt
        blocks = run_starts(row_level)  # one block of rows per level
        b = np.searchsorted(blocks, r, "right") - 1
        span = _pow2(np.diff(np.append(blocks, R)).max())
        group = b * span + (r - blocks[b])
        plans = [(_Sweep(p, group, r, order, stop=span), 1, 1), (_Sweep(p, group, r, order, first=span), 1, 0)]
        gts = run_starts(row_gt)  # the rows of one gt value are adjacent, one per level
        rows_per_gt = np.diff(np.append(gts, R))
        g = np.searchsorted(gts, r, "right") - 1
        shared = rows_per_gt[g] > 1
        if shared.any():
            span = _pow2(rows_per_gt.max())
            plans.append((_Sweep(p[shared], g[shared] * span + (r - gts[g])[shared], r[shared], order[shared], stop=span), -1, 0))
        return plans

    def counts(self, M, N, most, jt, jt_gp, margins: dict | None = None, work: Workspace | None = None) -> dict[str, ResampledPairs]:
        # (cells, resamples), int32 while the sweep's products (a count times twice a resample's size) fit
        dtype = np.int32 if 2 * most < 2**31 else np.int64
        MT = transposed(M, out=scratch(work, "cells_T", M.shape[::-1], dtype))
        row_total = self.row_sums @ MT  # each sum is at most a resample's size
        gt_total = np.add.reduceat(row_total, self.gt_starts, axis=0)
        if margins is not None:  # group sizes per prediction value and per gt value, for Spearman's ranks
            margins["pred_groups"], margins["gt"] = self.pred_groups, gt_total.T  # pred: summed only where needed
            margins["cells_T"] = MT  # the counts with cells as rows, for Spearman's sums
        # Tied position pairs: copies of one cell (jt) plus pairs of different cells in one group.
        xt, yt = _choose2(gt_total), jt + self.pred_groups.excess(MT)
        xt_row, yt_lv = _choose2(row_total), jt + self.level_pred_groups.excess(MT)
        Nl = np.stack([row_total[rows].sum(axis=0, dtype=np.int64) for rows in self.level_rows], axis=0)
        pairs, ties = N * (N - 1) // 2 - xt, yt - jt_gp
        pairs_i, ties_i = _choose2(Nl) - xt_row, yt_lv - jt
        signed, signed_i = np.zeros_like(N), np.zeros_like(N)
        # per cell: its largest count in the chunk times the largest resample: the sums' int32 runs
        bound = M.max(axis=0, initial=0).astype(np.int64) * int(N.max(initial=0))
        for sweep, in_all, in_intra in self.plans:
            s = sweep.signed_sum(MT, row_total, bound, work)  # the sweep's items are rows of MT
            signed += in_all * s
            signed_i += in_intra * s
        conc = (pairs - ties + signed) // 2
        conc_i = (pairs_i - ties_i + signed_i) // 2
        total = ResampledPairs(pairs, conc, pairs - ties - conc, ties)
        intra = ResampledPairs(pairs_i, conc_i, pairs_i - ties_i - conc_i, ties_i)
        return {"all": total, "intra": intra, "inter": total - intra}


def _pow2(k: int) -> int:
    """The smallest power of two >= k (k >= 1)."""
    return 1 << (int(k) - 1).bit_length()


class _SameGtOtherLevel:
    """Position pairs in different rows (levels) of one gt value with equal predictions: the shared
    boundary scores. Cells are distinct (gt, pred, level), so the cells of one (gt, pred) value lie in
    different rows and these pairs are the pairs of different cells of one (gt, pred) group: group
    sums over the few groups of several cells, linear in the cells (a pairwise matrix over the cells of
    one gt value grew quadratically when thousands of continuous predictions shared a boundary score)."""

    def __init__(self, gt_rank, pred_rank):
        """From the cells' dense ranks of gt and pred."""
        keys = gt_rank * (int(pred_rank.size) + 1) + pred_rank  # (gt, pred) values as one integer
        order = np.argsort(keys, kind="stable")
        starts = run_starts(keys[order])
        sizes = np.diff(np.append(starts, order.size))
        self.cells = order[np.repeat(sizes > 1, sizes)]  # cells of groups with several cells, group by group
        multi = sizes[sizes > 1]
        self.starts = np.concatenate(([0], np.cumsum(multi)[:-1])) if multi.size else multi

    def equal_pred(self, M: np.ndarray) -> np.ndarray:
        if not self.cells.size:
            return np.zeros(M.shape[0], dtype=np.int64)
        W = M[:, self.cells].astype(np.int64)
        S = np.add.reduceat(W, self.starts, axis=1)
        return ((S * S).sum(axis=1) - (W * W).sum(axis=1)) // 2
