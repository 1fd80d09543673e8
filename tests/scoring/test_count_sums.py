"""The count sums of the bootstrap kernels (scoring.count_sums) equal numpy's plain sums."""
from __future__ import annotations

import numpy as np
import pytest

from scoring import count_sums


def counts(rows, columns, dtype, seed=0, high=5):
    return np.random.default_rng(seed).integers(0, high, (rows, columns)).astype(dtype)


def with_zero_row(X):
    return np.concatenate([np.zeros((1, X.shape[1]), X.dtype), np.cumsum(X, axis=0, dtype=X.dtype)])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("columns", [1, 2, 13, 50])
def test_running_and_segment_sums_equal_numpy(monkeypatch, dtype, columns):
    for scan_rows in (1000, 0):  # blocks only past 1,000 rows, then for every size
        monkeypatch.setattr(count_sums, "SCAN_ROWS", scan_rows)
        for rows in (0, 1, 5, 63, 64, 65, 130, 1000, 1001, 4097):
            X = counts(rows, columns, dtype, seed=rows)
            got = count_sums.running_sums(X)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, with_zero_row(X))
            if rows:
                starts = np.unique(np.concatenate(([0], np.random.default_rng(rows).integers(0, rows, 9))))
                got = count_sums.segment_sums(X, starts)
                assert got.dtype == dtype
                np.testing.assert_array_equal(got, np.add.reduceat(X, starts, axis=0))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("columns", [1, 12, 13])
def test_block_scan_looks_up_the_running_sums_of_its_rows(monkeypatch, dtype, columns):
    MT = counts(3000, columns, dtype, seed=columns, high=1000)
    rng = np.random.default_rng(1)
    for scan_rows in (1000, 0):
        monkeypatch.setattr(count_sums, "SCAN_ROWS", scan_rows)
        for size in (0, 1, 7, 64, 65, 999, 1001, 2500):
            rows = rng.integers(0, MT.shape[0], size)
            scan = count_sums.BlockScan(rows)
            positions = np.concatenate(([0, size], rng.integers(0, size + 1, 50)))
            got = np.take(scan.sums(MT), scan.at(positions), axis=0)
            np.testing.assert_array_equal(got, with_zero_row(MT[rows])[positions])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_column_dots_equal_int64_sums_of_products_near_the_bound(dtype):
    """Runs of rows summed in int32 up to the last row whose bound still fits, past it in int64; a row whose
    products alone leave int32 (an int32 product would wrap) too."""
    rng = np.random.default_rng(2)
    size = 100_000  # X: running sums up to a resample's size; Y: counts
    for rows in (0, 1, 3, 700, 5000, 20011):
        X = rng.choice(np.array([size, 0, 17], dtype=dtype), (rows, 7), p=[0.8, 0.1, 0.1])
        Y = rng.integers(0, 30, (rows, 7)).astype(dtype)
        if rows:
            X[:, 0], Y[:, 0] = size, Y.max(axis=1)  # every product at its row's bound
        if rows > 3:
            Y[2, 1], X[2, 1] = 40_000, size  # 4e9: past int32 on its own
        bound = X.max(axis=1, initial=0).astype(np.int64) * Y.max(axis=1, initial=0)
        got = count_sums.column_dots(X, Y, bound)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, (X.astype(np.int64) * Y).sum(axis=0))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_group_matrix_sums_rows_per_group_in_their_dtype(dtype):
    X = counts(1000, 13, dtype, high=1000)
    group = np.random.default_rng(2).integers(0, 40, 1000)
    group[group == 7] = 8  # a group without rows: a row of zeros
    got = count_sums.group_matrix(group) @ X
    assert got.dtype == dtype and got.shape == (40, 13)
    np.testing.assert_array_equal(got, np.stack([X[group == g].sum(axis=0) for g in range(40)]))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (1, 1), (7, 3), (50, 20_000), (9, 8193)])
def test_transposed_copies_the_transpose(shape):
    X = counts(*shape, np.int32, high=1000)
    for dtype in (None, np.int64):
        got = count_sums.transposed(X, dtype)
        assert got.flags.c_contiguous and got.dtype == (dtype or np.int32)
        np.testing.assert_array_equal(got, X.T)
