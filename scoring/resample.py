"""Vectorised bootstrap kernels: every metric of every resample at once, from one index draw.

A bootstrap resample of n images is described by its multiplicities: `W[b, i]` = how many times
image i was drawn in resample b (each row sums to n). Every metric of a resample is a function of
the original arrays weighted by W, so the resampled arrays are never materialised and no Python
loop runs over resamples. Indices are drawn once per run (`draw`) and reused by every metric, so
intervals of different metrics (and of two runs in a paired comparison) come from the same images.

The pairwise counts (pairs of positions in the resample, as scoring.metrics defines them) come from
scoring.resample_pairs.
"""
from __future__ import annotations

import numpy as np

from .count_sums import BlockScan, Workspace, group_matrix, running_sums, scratch
from .resample_pairs import PairPlan, ResampledPairs, dense_rank, run_starts


def draw(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) bootstrap indices: the single draw every metric of a run reuses."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int32 if n < 2**31 else np.int64)


class LazyDraw:
    """The indices `draw(n, resamples, seed)` gives, made a block of rows at a time while they are read
    (issue 37): one generator, rows in order, so the same numbers, without the (resamples, n) array held
    (200 MB at 100,000 images). For a draw read once or twice: a run's metrics (`metrics.evaluate`: no slower, as
    the pages of a fresh 200 MB array cost about what drawing its numbers costs), a paired comparison (read for
    each of its two runs) and the agreement study's `agreement_ci.Draw`. A draw that serves many runs (the
    leaderboard's) is held whole: drawing it again for each run costs more."""

    def __init__(self, n: int, resamples: int, seed: int):
        self.n, self.resamples, self.seed = n, resamples, seed

    @property
    def shape(self) -> tuple[int, int]:
        return (self.resamples, self.n)

    def blocks(self, size: int):
        rng = np.random.default_rng(self.seed)
        dtype = np.int32 if self.n < 2**31 else np.int64
        for start in range(0, self.resamples, size):
            yield start, rng.integers(0, self.n, size=(min(size, self.resamples - start), self.n), dtype=dtype)


def blocks(idx, size: int):
    """(first row, rows) blocks of `size` rows of a draw: an array, or a LazyDraw made block by block."""
    if isinstance(idx, LazyDraw):
        yield from idx.blocks(size)
        return
    for start in range(0, idx.shape[0], size):
        yield start, idx[start:start + size]


def multiplicities(idx: np.ndarray, n: int, of: np.ndarray | None = None) -> np.ndarray:
    """(resamples, n) counts W[b, i]: how many times bin i is drawn in resample b of `idx`, where item j
    falls in bin of[j] (default: its own bin, so n is the number of items)."""
    k = idx.shape[0]
    flat = idx.astype(np.intp) if of is None else of[idx]  # a fresh array in bincount's index type, offset in place
    flat += (np.arange(k, dtype=np.intp) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=k * n).reshape(k, n)


def distinct_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, axis=0, return_inverse=True) of a 2-D float array: the same rows, order and
    inverse, from one lexsort of the columns (np.unique sorts the rows as records, several times slower
    with many distinct rows: continuous scores). Rows holding NaN or -0.0, whose representative or
    order could depend on the sort, go to np.unique itself."""
    if not keys.size or np.isnan(keys).any() or (np.signbit(keys) & (keys == 0)).any():
        uniq, of = np.unique(keys, axis=0, return_inverse=True)
        return uniq, of.ravel()
    order = np.lexsort(keys.T[::-1])
    rows = keys[order]
    new = np.empty(order.size, dtype=bool)
    new[0] = True
    np.any(rows[1:] != rows[:-1], axis=1, out=new[1:])
    of = np.empty(order.size, dtype=np.intp)
    of[order] = np.cumsum(new) - 1
    return rows[new], of


class Cells:
    """Items merged into distinct (gt, pred, level) cells: every metric is a function of cell counts."""

    def __init__(self, gt: np.ndarray, pred: np.ndarray, level: np.ndarray):
        keys = np.stack([gt, pred, level.astype(float)], axis=1)
        uniq, of = distinct_rows(keys)
        self.of = of.ravel().astype(np.intp, copy=False)  # cell of each item (bincount's index type)
        self.gt, self.pred, self.level = uniq[:, 0], uniq[:, 1], uniq[:, 2].astype(np.int64)
        self.size = uniq.shape[0]
        self._plan = None
        self._ranks = None
        self._pred_ranks = None

    def from_indices(self, idx: np.ndarray, work: Workspace | None = None, floats: np.ndarray | None = None) -> np.ndarray:
        """(resamples, cells) counts straight from bootstrap indices, one resample at a time: its counts
        (one row of cells) stay in the CPU cache while they are counted, where a block of resamples'
        (multiplicities) is written all over an array of resamples x cells (issue 37: 100,000 cells
        with continuous scores). With `work`, written into its "counts" array; with `floats`, a
        (resamples, cells) float array, the same counts written into it too, each row while it is
        still in the cache (a float copy of the whole array afterwards reads it back from memory)."""
        out = scratch(work, "counts", (idx.shape[0], self.size), np.int32)
        for b in range(idx.shape[0]):
            counts = np.bincount(np.take(self.of, idx[b]), minlength=self.size)
            out[b] = counts
            if floats is not None:
                floats[b] = counts
        return out

    @property
    def ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense ranks of the cells' prediction and gt, made once (the pair plan and Spearman's sums share them)."""
        if self._ranks is None:
            self._ranks = dense_rank(self.pred), dense_rank(self.gt)
        return self._ranks

    def pred_ranks(self, ranks: tuple[np.ndarray, np.ndarray]) -> "PredRanks":
        """PredRanks of these cells, `ranks` their dense ranks of prediction and gt; made once."""
        if self._pred_ranks is None:
            self._pred_ranks = PredRanks(*ranks)
        return self._pred_ranks

    @property
    def plan(self) -> PairPlan:
        if self._plan is None:
            self._plan = PairPlan(self.gt, self.pred, self.level, self.ranks)
        return self._plan

    def pairs_by_level(self, M: np.ndarray, margins: dict | None = None, work: Workspace | None = None) -> dict[str, ResampledPairs]:
        return self.plan.counts(M, margins, work)


# ---------------------------------------------------------------------------------------------
# Every metric of every resample of one run

RESAMPLE_CHUNK = 50  # resamples computed together: every temporary of a chunk stays in the CPU cache


def _group_sums(M: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(resamples, groups) sums of M over cells with equal keys (groups in key order)."""
    order = np.argsort(keys, kind="stable")
    return np.add.reduceat(M[:, order], run_starts(keys[order]), axis=1)


def _twice_centred_ranks(S: np.ndarray) -> np.ndarray:
    """2 x (average 1-based rank - mean rank) of each group of tied values, from the group sizes S
    (resamples, groups) in value order: exact integers (average ranks are halves), in S's memory layout.

    The group sizes come as (groups, resamples) arrays seen transposed: the running sums are taken down
    their rows (scoring.count_sums), and the rows of the result are what the gathers take per cell."""
    R = running_sums(S.T)  # (groups + 1, resamples): positions in the groups before; R[-1] is the resample's size
    D = R[1:] + R[:-1]
    D -= R[-1]  # 2 x rank = 2 x (before) + size + 1, less 2 x mean = size of the resample + 1
    return D.T if S.T.flags.c_contiguous else np.ascontiguousarray(D.T)


# Groups up to which a gather of cell values reads a (resamples, groups) array held in the CPU cache
CACHED_GROUPS = 4096


def _cell_values(D: np.ndarray, of: np.ndarray) -> np.ndarray:
    """(resamples, cells) C-contiguous float array of D[:, of] / 2 for D (resamples, groups).

    Few groups: gathered along the rows of D / 2 (small enough to stay in the CPU cache). Many (one
    per cell with continuous scores): a gather along such long rows steps through memory at random,
    so the rows of D's transpose (one group's resamples, adjacent) are gathered instead and halved
    while transposed back."""
    if D.shape[1] <= CACHED_GROUPS:
        return np.take(np.ascontiguousarray(D) * 0.5, of, axis=1)
    G = np.take(np.ascontiguousarray(D.T), of, axis=0)
    out = np.empty(G.shape[::-1])
    np.multiply(G.T, 0.5, out=out)
    return out


# Resample sizes n with n**3 below this: Spearman's sums below are exact in float64 in any order.
EXACT_RANK_SUMS = 2**53


def _cell_cubes(M: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per resample: sum of M**3 over the cells, M (resamples, cells) non-negative counts that sum to n
    per resample; summed in int32 where that fits (at most max(M)**2 x n)."""
    top = int(M.max(initial=0))
    if M.dtype == np.int32 and top * top * int(n.max(initial=0)) < 2**31:
        return np.einsum("ij,ij,ij->i", M, M, M).astype(np.int64)
    return np.einsum("ij,ij,ij->i", M, M, M, dtype=np.int64)


def _tie_cubes(S: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per resample: sum of S**3 over the groups, S (groups, resamples) non-negative counts that sum to
    n per resample; in int32 where the sum fits (at most max(S)**2 x n), which is most data."""
    top = int(S.max(initial=0))
    if S.dtype != np.int32 or top * top * int(n.max(initial=0)) >= 2**31:
        return np.einsum("ij,ij,ij->j", S, S, S, dtype=np.int64)
    C = S * S
    C *= S
    return C.sum(axis=0, dtype=np.int32).astype(np.int64)


class PredRanks:
    """Where the prediction ranks of every resample come from in Spearman's exact sums (the merge-sort path):
    the cells' counts gathered once in prediction order, block-interleaved (count_sums.BlockScan), whose
    running sums in place give each cell the positions before it and through it, beside its own count:
    no running sum over the groups of equal predictions and no gather of their ranks back to the cells
    (issue 37: one group per cell with continuous scores). Cells tied with others in the prediction take
    their group's bounds instead. Fixed once per run; `pred_rank` and `gt_rank` are the cells' ranks."""

    def __init__(self, pred_rank: np.ndarray, gt_rank: np.ndarray):
        order = np.argsort(pred_rank, kind="stable")
        L = order.size
        self.scan = scan = BlockScan(order)
        self.rows = rows = scan.K * scan.blocks
        q = np.arange(L)
        row = (q % scan.K) * scan.blocks + q // scan.K  # the layout's row of the cell at position q
        unused = np.ones(rows, dtype=bool)
        unused[row] = False
        self.padding = np.flatnonzero(unused)  # rows holding no cell: their counts are set to 0
        gt_of_row = np.zeros(rows, dtype=np.intp)
        gt_of_row[row] = gt_rank[order]
        # (gt values, rows): sums of the layout's rows per gt value. Compressed by column, so that the
        # product reads the rows in order and adds each into the few gt values' rows (held in the CPU
        # cache); compressed by row it reads them in gt order, all over memory: about 4x slower.
        self.gt_sums = group_matrix(gt_of_row).tocsc()
        ranks = pred_rank[order]
        starts = run_starts(ranks)
        sizes = np.diff(np.append(starts, L))
        tied = sizes > 1
        self.tied_rows = row[np.repeat(tied, sizes)]  # cells of groups of several cells
        self.group_lo, self.group_hi = scan.at(starts[tied]), scan.at(starts[tied] + sizes[tied])
        self.tied_lo, self.tied_hi = np.repeat(self.group_lo, sizes[tied]), np.repeat(self.group_hi, sizes[tied])

    def twice_ranks_times_counts(self, MT: np.ndarray, work: Workspace | None = None):
        """(P, excess): P (rows, resamples) = each cell's count times its 2 x 1-based average rank less 1,
        in the layout's rows (0 on padding), and per resample what the groups of several cells add to
        the sum of the cells' counts**3 to make it the sum of the prediction groups' sizes**3. From MT
        (cells, resamples); P in MT's dtype (a count times twice the resample's size)."""
        rows, B = self.rows, MT.shape[1]
        G = np.take(MT, self.scan.gather, axis=0, out=scratch(work, "pred_counts", (rows, B), MT.dtype), mode="clip")
        G[self.padding] = 0
        Y = self.scan.scan(scratch(work, "scan", (rows + 1, B), MT.dtype), source=G)
        # Y at a cell's row: the positions through it; Y[scan.at(p)]: the first p positions
        excess = np.zeros(B, dtype=np.int64)
        if self.tied_rows.size:
            size = (Y[self.group_hi] - Y[self.group_lo]).astype(np.int64)
            own = G[self.tied_rows].astype(np.int64)
            excess += (size * size * size).sum(axis=0) - (own * own * own).sum(axis=0)
        # 2 x (positions before) + own count: twice the average 1-based rank less 1
        P = self.scan.add_previous(Y, out=scratch(work, "cell_ranks", (rows, B), MT.dtype))
        if self.tied_rows.size:
            P[self.tied_rows] = Y[self.tied_lo] + Y[self.tied_hi]
        P *= G  # within int32 where MT is int32: a count times 2 n < 2**31 (PairPlan's `most`)
        return P, excess


def _exact_rank_sums(Sg, M, MT, pred_ranks: PredRanks, work: Workspace | None = None):
    """Spearman's sxx, syy and sxy per resample from the gt group sizes Sg (resamples, gt values) and the
    counts M (resamples, cells) and MT (its transpose), as exact integers (then the same floats as the
    float path's).

    - sxx (and syy) depend only on the ties: the sum over groups of S x (2 x centred rank)**2 is
      (n**3 - sum of S**3) / 3, n the resample's size (the variance of mid-ranks);
    - sxy = sum over cells of M x dp x dg. The centred gt ranks sum to 0 over the positions, so the
      prediction side may be taken uncentred (2 x rank - 1, non-negative: `PredRanks`); the cells'
      M x that rank are summed per gt value and weighted by the few gt values' ranks, instead of a
      gather of a gt rank per cell.
    Every product and partial sum is an integer of magnitude below 2 n**3 (int64 here), and the
    results (at most n**3 / 4 in quarter units) are below 2**53: converted to float exactly.
    `work` keeps the (cells, resamples) scratch arrays across chunks."""
    quarter = 0.25
    n = Sg.sum(axis=1, dtype=np.int64)
    P, excess = pred_ranks.twice_ranks_times_counts(MT, work)
    sxx = (n**3 - _cell_cubes(M, n) - excess) // 3 * quarter  # an integer: the float path's exact value
    syy = (n**3 - _tie_cubes(Sg.T, n)) // 3 * quarter
    if P.dtype == np.int32 and 2 * int(Sg.max(initial=0)) * int(n.max(initial=0)) >= 2**31:
        P = P.astype(np.int64)  # a gt value's sum (at most its count times 2 n) may not fit int32
    Q = pred_ranks.gt_sums @ P  # (gt values, resamples)
    Dg = _twice_centred_ranks(Sg).T  # (gt values, resamples)
    sxy = np.einsum("ij,ij->j", Q.astype(np.int64), Dg.astype(np.int64))
    return sxx, syy, sxy * quarter


def metric_resamples(cells: Cells, idx: np.ndarray, predicted_level: np.ndarray, thresholds=(1, 2, 3)) -> dict[str, np.ndarray]:
    """Every severity metric of every resample given by bootstrap indices `idx` (resamples, items): an array,
    or a LazyDraw made a chunk at a time (evaluate, paired comparison), as (resamples,) arrays with NaN
    where undefined; binary_T entries are dicts of tp/fp/fn/tn counts.

    `predicted_level` is the level of each cell's prediction under the profile's boundaries. The
    resamples are taken RESAMPLE_CHUNK at a time. The counts, ranks and pair figures do not depend on the chunk
    size; Pearson, MAE and bias come from a BLAS product of the chunk's counts, whose last bit may (the
    library blocks a product by its number of rows), so the chunk size is part of what fixes the published
    intervals' last digits.
    """
    g, p, lv = cells.gt, cells.pred, cells.level
    err = p - g
    gm, pm = g - g.mean(), p - p.mean()
    features = [pm, gm, pm * pm, gm * gm, pm * gm, np.abs(err), err, (predicted_level == lv).astype(float)]
    for t in thresholds:
        truth, guess = lv <= t, predicted_level <= t
        features += [truth & guess, ~truth & guess, truth & ~guess, ~truth & ~guess]
    features = np.stack(features, axis=1).astype(float)
    ranks = cells.ranks
    work = Workspace()  # the chunks' scratch arrays, written again by every chunk
    parts = []
    for _, chunk in blocks(idx, RESAMPLE_CHUNK):
        Mf = scratch(work, "counts_float", (chunk.shape[0], cells.size), float)
        M = cells.from_indices(chunk, work, floats=Mf)
        parts.append(_chunk_metrics(cells, M, Mf, features, ranks, thresholds, work))
    if not parts:
        empty = np.zeros((0, cells.size), dtype=np.int32)
        parts = [_chunk_metrics(cells, empty, empty.astype(float), features, ranks, thresholds)]
    out: dict = {}
    for key, value in parts[0].items():
        if isinstance(value, dict):
            out[key] = {k: np.concatenate([part[key][k] for part in parts]) for k in value}
        else:
            out[key] = np.concatenate([part[key] for part in parts])
    return out


def _chunk_metrics(cells: Cells, M: np.ndarray, Mf: np.ndarray, features: np.ndarray, ranks, thresholds,
                   work: Workspace | None = None) -> dict:
    """The metrics of one chunk of resamples from its counts M (resamples, cells) and Mf, M as floats."""
    N = M.sum(axis=1, dtype=M.dtype).astype(float)  # each row sums to its resample size: the same floats as a float sum
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
        pairs = cells.pairs_by_level(M, margins, work)
        gp_, gg_ = ranks
        Sg = margins["gt"] if "gt" in margins else _group_sums(M, gg_)
        # Ranks minus the mean rank: halves of integers, so the same floats however they are computed.
        if "cells_T" in margins and int(N.max(initial=0)) ** 3 < EXACT_RANK_SUMS:
            sxx, syy, sxy = _exact_rank_sums(Sg, M, margins["cells_T"], cells.pred_ranks(ranks), work)
        else:
            if "pred" in margins:
                Sp = margins["pred"]
            elif "pred_groups" in margins:  # the merge sort's grouping of its transposed counts
                Sp = margins["pred_groups"].sums(margins["cells_T"], work).T
            else:
                Sp = _group_sums(M, gp_)
            Dp, Dg = _twice_centred_ranks(Sp), _twice_centred_ranks(Sg)
            dp, dg = Dp * 0.5, Dg * 0.5
            sxx = (Sp * dp * dp).sum(axis=1)
            syy = (Sg * dg * dg).sum(axis=1)
            sxy = np.einsum("ij,ij,ij->i", Mf, _cell_values(Dp, gp_), _cell_values(Dg, gg_))
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
