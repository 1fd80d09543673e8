"""Sums of bootstrap counts down the rows of (rows, resamples) arrays, without transposing them.

The pair counts (scoring.resample_pairs) and Spearman's ranks (scoring.resample) keep per-resample
counts as (rows, resamples) arrays: their gathers then take whole rows. Sums down the rows of such an
array are slow in numpy: a cumulative sum or reduceat along axis 0 steps one element at a time
through a column, a whole row apart, and each step waits for the previous one. Two things make them
cheap without a transpose:
- two int32 counts side by side are one int64 (`pairs_view`): adding the int64 adds both halves
  exactly while each half's sums stay below 2**31 (non-negative counts of one resample: at most its
  size), so every sum does half the steps;
- a running sum is taken a block of SCAN_BLOCK rows at a time, every block at once (one vectorised
  add per row of a block), then the blocks' totals are carried over;
- sums of rows by group are a sparse 0/1 matrix times the array (`group_matrix`): scipy adds each
  row into its group's row, vectorised along the row (a reduceat along axis 0 steps down one column
  at a time).
The scratch arrays of one run's chunks of resamples are taken from a `Workspace` (issue 37): each chunk
writes megabytes of temporaries, and memory freshly given by the system costs a page fault per page
(the kernel zeroes it) every time the allocator returned it in between.
"""
from __future__ import annotations

import numpy as np

SCAN_ROWS = 1000  # rows past which a running sum is taken by blocks (below, one numpy cumsum is cheaper)
SCAN_BLOCK = 64  # rows per block: 64 vectorised adds per running sum, each over all blocks at once


class Workspace:
    """Scratch arrays reused across the chunks of resamples of one run, one buffer per name, grown when
    a larger array is asked for. An array of a name is valid until that name is asked for again."""

    def __init__(self):
        self._buffers: dict[str, np.ndarray] = {}

    def array(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised C-contiguous array of `shape` and `dtype` in the buffer of `name`."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buffer = self._buffers.get(name)
        if buffer is None or buffer.nbytes < nbytes:
            buffer = self._buffers[name] = np.empty(max(nbytes, 1), dtype=np.uint8)
        return buffer[:nbytes].view(dtype).reshape(shape)


def scratch(work: "Workspace | None", name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """work.array(name, shape, dtype), or a fresh array without a workspace."""
    return np.empty(shape, dtype=dtype) if work is None else work.array(name, shape, dtype)


def pairs_view(X: np.ndarray) -> np.ndarray:
    """X itself, or for a C-contiguous int32 X with an even number of columns its int64 view (two
    adjacent columns in one element). Only for non-negative counts whose sums stay below 2**31."""
    if X.dtype == np.int32 and X.ndim == 2 and X.shape[1] % 2 == 0 and X.flags.c_contiguous:
        return X.view(np.int64)
    return X


def running_sums(X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(rows + 1, columns) running sums of the non-negative counts X (rows, columns) down its rows,
    from a zero row; the same numbers as a cumulative sum along axis 0. `out`: a C-contiguous array of
    that shape and X's dtype to write them into."""
    L = X.shape[0]
    out = np.empty((L + 1,) + X.shape[1:], dtype=X.dtype) if out is None else out
    out[0] = 0
    V, W = pairs_view(np.ascontiguousarray(X)), pairs_view(out)
    if L <= SCAN_ROWS:
        np.cumsum(V, axis=0, out=W[1:])
        return out
    K = SCAN_BLOCK
    nb = L // K
    body, src = W[1:1 + nb * K].reshape(nb, K, V.shape[1]), V[:nb * K].reshape(nb, K, V.shape[1])
    body[:, 0] = src[:, 0]
    for j in range(1, K):  # running sums inside every block at once
        np.add(body[:, j - 1], src[:, j], out=body[:, j])
    body[1:] += np.cumsum(body[:-1, K - 1], axis=0)[:, None, :]  # the totals of the blocks before
    if nb * K < L:
        np.cumsum(V[nb * K:], axis=0, out=W[1 + nb * K:])
        W[1 + nb * K:] += W[nb * K]
    return out


def transposed(X: np.ndarray, dtype=None, out: np.ndarray | None = None) -> np.ndarray:
    """A C-contiguous copy of the 2-D X's transpose, in `dtype` (default X's; or into `out`). One
    numpy copy into the (reused) `out`: with numpy 2.4, measured on (50, 20,000-200,000) int32 counts,
    faster than copying pieces of a few rows by some thousand columns at a time (2.7-3.0 against 4.1-4.4
    ms at 85,878 cells, 3.5 against 12 ms into int64), which once beat np.ascontiguousarray(X.T, dtype)
    into fresh memory."""
    rows, columns = X.shape
    out = np.empty((columns, rows), dtype=X.dtype if dtype is None else dtype) if out is None else out
    np.copyto(out, X.T)
    return out


def group_matrix(group: np.ndarray):
    """(groups, rows) sparse 0/1 matrix G with G[group[i], i] = 1, group[i] in 0 .. groups - 1: G @ X is
    the (groups, columns) sums of the rows of X (rows, columns) per group, in X's dtype (int32 counts
    stay int32: exact while every sum fits), several times faster than a gather and a reduceat."""
    from scipy import sparse  # imported where used, not at start-up

    group = np.asarray(group)
    rows = group.size
    groups = int(group.max()) + 1 if rows else 0
    # CSR built directly (each group's rows in order): from (row, column) pairs scipy sorts them, ~10x slower
    index = np.int32 if rows < 2**31 else np.int64
    indptr = np.zeros(groups + 1, dtype=index)
    np.cumsum(np.bincount(group, minlength=groups), out=indptr[1:])
    columns = np.argsort(group, kind="stable").astype(index, copy=False)
    return sparse.csr_array((np.ones(rows, dtype=np.int8), columns, indptr), shape=(groups, rows))


def segment_sums(X: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """np.add.reduceat(X, starts, axis=0) of non-negative counts X (rows, columns) in X's dtype, two
    int32 columns per step where they pair up (a reduceat of int32 along axis 0, summed in int64 as
    numpy does by default, is about 4x slower)."""
    V = pairs_view(np.ascontiguousarray(X))
    return np.add.reduceat(V, starts, axis=0, dtype=V.dtype).view(X.dtype)


class BlockScan:
    """Running sums down some rows of a (cells, resamples) count array, the rows and the positions later
    looked up fixed once per run (the merge-sort sweep's left halves: scoring.resample_pairs._Sweep).

    The rows are gathered block-interleaved: row q of the sum (block q // K, step q % K) lands at
    (q % K) x blocks + q // K, so each of the K steps of the scan adds one contiguous slab holding
    that step of every block (running_sums adds one short row per block per step, which costs numpy
    a loop per block). `at` maps the positions looked up to rows of what `sums` returns."""

    def __init__(self, rows: np.ndarray):
        L = rows.size
        self.K = K = SCAN_BLOCK if L > SCAN_ROWS else 1  # K = 1: a single block, one plain cumulative sum
        self.blocks = -(-L // K)
        q = np.arange(L)
        self.gather = np.full(K * self.blocks, rows[0] if L else 0, dtype=np.intp)  # padding: never looked up
        self.gather[(q % K) * self.blocks + q // K] = rows

    def at(self, positions: np.ndarray) -> np.ndarray:
        """Rows of `sums` holding the sums of the first p rows, for p in positions (0 <= p <= rows)."""
        q = np.asarray(positions) - 1
        return np.where(q < 0, self.K * self.blocks, (q % self.K) * self.blocks + q // self.K)

    def sums(self, MT: np.ndarray, work: Workspace | None = None) -> np.ndarray:
        """Running sums of the rows of the non-negative counts MT (cells, resamples); the last row is 0.
        With `work`, written into its "scan" array."""
        K, nb = self.K, self.blocks
        Y = scratch(work, "scan", (K * nb + 1, MT.shape[1]), MT.dtype)
        np.take(MT, self.gather, axis=0, out=Y[:-1], mode="clip")  # "clip": not buffered (indices are valid)
        return self.scan(Y)

    def scan(self, Y: np.ndarray, source: np.ndarray | None = None) -> np.ndarray:
        """Y (rows + 1, resamples), C-contiguous, its rows but the last gathered in this layout (`gather`),
        turned into their running sums in place; the last row is set to 0. With `source` (rows,
        resamples), C-contiguous and of Y's dtype: the running sums of source's rows written into Y
        (no copy of the counts into Y first)."""
        K, nb = self.K, self.blocks
        Y[-1] = 0
        V = pairs_view(Y)
        body = V[:-1].reshape(K, nb, V.shape[1])
        counts = body if source is None else pairs_view(source).reshape(body.shape)
        if source is not None:
            body[0] = counts[0]
        for j in range(1, K):  # step j of every block at once
            np.add(counts[j], body[j - 1], out=body[j])
        if nb > 1:
            body[:, 1:] += np.cumsum(body[K - 1, :-1], axis=0)  # the totals of the blocks before
        return Y

    def add_previous(self, Y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out (rows, resamples) = `scan`'s running sums Y at each row plus those at the row of the position
        before it (0 before the first position): for a row's own count c, 2 x (positions before) + c.
        Step j > 0 of a block follows step j - 1 of that block, step 0 the last step of the block before."""
        K, nb = self.K, self.blocks
        np.add(Y[nb:K * nb], Y[:(K - 1) * nb], out=out[nb:K * nb])
        out[0] = Y[0]
        np.add(Y[1:nb], Y[(K - 1) * nb:K * nb - 1], out=out[1:nb])
        return out


def column_dots(X: np.ndarray, Y: np.ndarray, row_bound: np.ndarray) -> np.ndarray:
    """int64 sums down the rows of X * Y, non-negative integer arrays (rows, columns) whose products in
    row r lie within row_bound[r]. For int32, one einsum per run of rows whose bounds add up below
    2**31, so that its sums cannot leave int32 (no product array is written: about 3x cheaper than a
    product and an int64 sum), then the runs' sums in int64; a row whose bound alone passes that, in int64."""
    if X.dtype != np.int32 or Y.dtype != np.int32:
        return np.einsum("ij,ij->j", X, Y, dtype=np.int64)
    limit = 2**31 - 1
    ends = np.cumsum(row_bound, dtype=np.int64)
    total = np.zeros(X.shape[1], dtype=np.int64)
    start = 0
    while start < X.shape[0]:
        stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + limit, "right"))
        if stop > start:
            total += np.einsum("ij,ij->j", X[start:stop], Y[start:stop])
        else:  # this row's products may not even fit int32
            stop = start + 1
            total += np.einsum("ij,ij->j", X[start:stop], Y[start:stop], dtype=np.int64)
        start = stop
    return total
