"""Joint fit of a scoring profile's weights and boundaries to published CPRT-Bench rows (spec section 3).

Pure functions over numpy arrays, no ORM. `scoring/cprt_bench` calls `fit_profile` on import.

How it works ([decision]s, documented in docs/scoring.md):
- For fixed weights every published score is linear in the three inner boundaries: a row of level l
  with stretched ratio t has score `(1 - sqrt t) * lo(l) + sqrt t * hi(l)` with `hi(1) = 1`,
  `hi(l) = lo(l-1)` and `lo(4) = 0`. The boundaries are fitted by **minimising the largest residual**
  (a Chebyshev fit, a small linear programme), because the acceptance test is on the largest
  residual: rounding to d decimals leaves every true score within 0.5 * 10^-d, and a least-squares
  fit may not.
- The weights are searched over the named weight sets and every exponential set (B^3, B^2, B, 1) with
  a base from 11 (the smallest with the dominance property) to 300. The fitted weights are the ones
  with the smallest largest residual (ties: the provisional default first, then the smaller base).
  Every candidate whose largest residual is within the tolerance reproduces the file equally well;
  they are all reported as the candidate set.
- Among boundaries that reproduce the file, the least-squares ones are preferred (closer to the truth
  on average when the scores were rounded); the Chebyshev ones are used when only they reproduce it.
- Pruning: a weight set whose least-squares root-mean-square residual exceeds the tolerance cannot
  reproduce the file (the largest residual of any fit is at least its RMS, which least squares
  minimises), so its linear programme is skipped; the default, tight and the three best by RMS are
  always solved.
- Rows with equal level-count vectors share t for every weight set, so the programme only needs the
  smallest and largest published score of each distinct vector (at most 1,320 of them).
- Tolerance: the file's printed precision d (the most decimals any score carries, up to 12; more
  means full precision) gives `0.5 * 10^-d + FLOAT_SLACK`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .engine import (
    DEFAULT_WEIGHT_SET, LEVEL_MAXIMA, LEVELS, WEIGHT_SETS, Bounds, a6_check, exponential_weights, severity_array,
    weight_set_name,
)

FLOAT_SLACK = 1e-9
MAX_DECIMALS = 12
EXPONENTIAL_BASES = range(11, 301)


def printed_decimals(scores: np.ndarray) -> int | None:
    """The most decimals any score carries as printed (0.947 -> 3); None beyond MAX_DECIMALS."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return None
    remaining = np.ones(scores.size, dtype=bool)
    for d in range(MAX_DECIMALS + 1):
        remaining &= np.round(scores, d) != scores
        if not remaining.any():
            return d
    return None


def tolerance(decimals: int | None) -> float:
    return (0.5 * 10.0 ** -decimals if decimals is not None else 0.0) + FLOAT_SLACK


def candidate_weight_sets() -> dict[str, tuple[int, int, int, int]]:
    """Every weight set the fit tries, by name (the default first)."""
    out = {DEFAULT_WEIGHT_SET: WEIGHT_SETS[DEFAULT_WEIGHT_SET]}
    out.update(WEIGHT_SETS)
    for base in EXPONENTIAL_BASES:
        out.setdefault(f"exponential-{base}", exponential_weights(base))
    return out


def _root_t(counts: np.ndarray, weights: Sequence[int], maxima: Sequence[int] = LEVEL_MAXIMA) -> tuple[np.ndarray, np.ndarray]:
    """(determined level with 0 for an empty vector, sqrt of the stretched ratio) per row."""
    counts = np.asarray(counts, dtype=np.int64)
    w = np.asarray(weights, dtype=np.int64)
    positive = counts > 0
    empty = ~positive.any(axis=1)
    level = np.where(empty, 0, positive.argmax(axis=1) + 1)
    lmax = np.array([sum(wi * m for wi, m in zip(weights[i:], maxima[i:])) for i in range(4)], dtype=np.int64)
    safe = np.where(empty, 1, level)
    w_l = w[safe - 1]
    t = np.where(empty, 0.0, (counts @ w - w_l) / (lmax[safe - 1] - w_l))
    return level, np.sqrt(t)


def determined_levels(counts: np.ndarray) -> np.ndarray:
    """l* per row of per-level counts, 4 for an empty vector (as a published level is written)."""
    level, _ = _root_t(np.asarray(counts).reshape(-1, 4), (1, 1, 1, 1))
    return np.where(level == 0, 4, level)


def _design(level: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """score = A @ (lo1, lo2, lo3) + c, row by row."""
    n = level.size
    A = np.zeros((n, 3))
    c = np.zeros(n)
    for lv in LEVELS:
        m = level == lv
        if lv == 1:
            A[m, 0] = 1 - r[m]
            c[m] = r[m]
        elif lv in (2, 3):
            A[m, lv - 1] = 1 - r[m]
            A[m, lv - 2] = r[m]
        else:
            A[m, 2] = r[m]
    return A, c


def chebyshev_bounds(level: np.ndarray, r: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray | None, float]:
    """Inner boundaries minimising the largest residual against scores within [low, high] per row.

    Variables (lo1, lo2, lo3, e): minimise e subject to |A x + c - s| <= e for the smallest and the
    largest published score of each row, and 1 >= lo1 >= lo2 >= lo3 >= 0.
    """
    A, c = _design(level, r)
    ones = np.ones((A.shape[0], 1))
    a_ub = np.vstack([np.hstack([A, -ones]), np.hstack([-A, -ones]),
                      [[-1, 1, 0, 0], [0, -1, 1, 0]]])
    b_ub = np.concatenate([high - c, c - low, [0.0, 0.0]])
    from scipy.optimize import linprog  # imported where used (start-up time)

    res = linprog(np.array([0, 0, 0, 1.0]), A_ub=a_ub, b_ub=b_ub, bounds=[(0, 1), (0, 1), (0, 1), (0, None)], method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if not res.success:
        return None, float("inf")
    x = res.x[:3]
    return x, _largest_residual(A, c, x, low, high)


def _largest_residual(A, c, x, low, high) -> float:
    fitted = A @ x + c
    return float(max(np.abs(fitted - low).max(), np.abs(fitted - high).max()))


def least_squares_bounds(level: np.ndarray, r: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(inner boundaries, RMS residual, largest residual) of the least-squares fit over both scores of each row."""
    A, c = _design(level, r)
    AA = np.vstack([A, A])
    target = np.concatenate([low - c, high - c])
    x, *_ = np.linalg.lstsq(AA, target, rcond=None)
    resid = AA @ x - target
    return x, float(np.sqrt(np.mean(resid**2))), float(np.abs(resid).max())


def _valid_partition(lo) -> bool:
    return 1 > lo[0] > lo[1] > lo[2] > 0


@dataclass
class Candidate:
    name: str
    weights: tuple[int, int, int, int]
    lo: tuple[float, float, float] | None
    max_residual: float

    def as_dict(self) -> dict:
        return {"name": self.name, "weights": list(self.weights), "lo": None if self.lo is None else list(self.lo),
                "max_residual": self.max_residual}


@dataclass
class ProfileFit:
    weights: tuple[int, int, int, int] | None
    weight_set: str | None
    bounds: Bounds | None
    max_residual: float | None  # of the chosen profile, recomputed with the engine against every row
    decimals: int | None
    tolerance: float
    candidates: list[Candidate] = field(default_factory=list)  # every weight set within the tolerance
    tried: int = 0
    solved: int = 0
    level_mismatches: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def reproduces(self) -> bool:
        return (self.bounds is not None and self.max_residual is not None and self.max_residual <= self.tolerance
                and not self.problems)

    @property
    def indistinguishable(self) -> bool:
        """More than one weight set reproduces the file: the rows cannot tell them apart."""
        return len(self.candidates) > 1

    def report(self) -> dict:
        return {
            "weights": None if self.weights is None else list(self.weights),
            "weight_set": self.weight_set,
            "lo": None if self.bounds is None else list(self.bounds.lo),
            "max_residual": self.max_residual,
            "decimals": self.decimals,
            "tolerance": self.tolerance,
            "reproduces": self.reproduces,
            "candidates": [c.as_dict() for c in self.candidates],
            "candidate_names": [c.name for c in self.candidates],
            "weight_sets_tried": self.tried,
            "weight_sets_solved": self.solved,
            "level_mismatches": self.level_mismatches,
            "problems": self.problems,
            "a6": None if self.bounds is None else a6_check(self.bounds, self.weights),
        }


def fit_profile(
    counts: np.ndarray,
    published_scores: np.ndarray,
    published_levels: np.ndarray | None = None,
    weight_sets: dict[str, tuple[int, int, int, int]] | None = None,
    decimals: int | None | str = "auto",
) -> ProfileFit:
    """Fit weights and boundaries jointly to published rows (per-level counts, score, level)."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, 4)
    scores = np.asarray(published_scores, dtype=float)
    if decimals == "auto":
        decimals = printed_decimals(scores)
    tol = tolerance(decimals)
    weight_sets = weight_sets or candidate_weight_sets()
    problems: list[str] = []
    mismatches: list[int] = []
    if published_levels is not None:
        mismatches = [int(i) for i in np.flatnonzero(np.asarray(published_levels) != determined_levels(counts))]
    if counts.shape[0] == 0:
        return ProfileFit(None, None, None, None, decimals, tol, problems=["no rows to fit"])

    unique, inverse = np.unique(counts, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    low = np.full(len(unique), np.inf)
    high = np.full(len(unique), -np.inf)
    np.minimum.at(low, inverse, scores)
    np.maximum.at(high, inverse, scores)

    squares = {}
    for name, weights in weight_sets.items():
        level, r = _root_t(unique, weights)
        squares[name] = (level, r, *least_squares_bounds(level, r, low, high))
    by_rms = sorted(squares, key=lambda name: squares[name][3])
    always = {DEFAULT_WEIGHT_SET, "tight", *by_rms[:3]}
    fitted: list[Candidate] = []
    for name, (level, r, ls_lo, rms, ls_max) in squares.items():
        if name not in always and rms > tol:
            continue  # its largest residual is at least rms > tol
        if ls_max <= tol and _valid_partition(ls_lo):
            lo, resid = ls_lo, ls_max
        else:
            lo, resid = chebyshev_bounds(level, r, low, high)
        fitted.append(Candidate(name, tuple(weight_sets[name]), None if lo is None else tuple(float(x) for x in lo), resid))
    order = {name: i for i, name in enumerate(weight_sets)}
    best = min(fitted, key=lambda c: (c.max_residual, order[c.name]))
    within = [c for c in fitted if c.max_residual <= tol]

    bounds = None
    max_residual = None
    present = {int(lv) for lv in _root_t(unique, (1, 1, 1, 1))[0]} - {0}
    for lv in (1, 2, 3):
        if lv not in present and lv + 1 not in present:
            problems.append(f"no rows of level {lv} or {lv + 1}: lo({lv}) is not determined by the file")
    if best.lo is None:
        problems.append("no weight set gives a valid partition")
    else:
        try:
            bounds = Bounds.from_inner(*best.lo)
        except ValueError as exc:
            problems.append(f"fitted boundaries are not a valid partition: {exc}")
    if bounds is not None:
        _, profile_scores = severity_array(counts, bounds, best.weights)
        max_residual = float(np.abs(profile_scores - scores).max())
    return ProfileFit(best.weights, weight_set_name(best.weights), bounds, max_residual, decimals, tol,
                      candidates=within, tried=len(weight_sets), solved=len(fitted), level_mismatches=mismatches, problems=problems)
