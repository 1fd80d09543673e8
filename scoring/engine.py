"""The CPRT severity score and consensus (spec sections 2 and 3): pure functions, no ORM.

Two paths compute the same numbers: per-image functions over plain Python values, and vectorised
numpy functions over whole datasets (`*_array`). Tests and `bench/scoring.py` check they agree.

Decisions (documented in docs/scoring.md):
- An image with no attribute at all is level 4 with score 0.0.
- Weights and boundaries come from a named, versioned scoring profile; the default one is provisional
  (exponential weights, base 87, lo = (0.8305, 0.50, 0.25, 0)), see WEIGHT_SETS.
- An image whose consensus set is incomplete has no consensus (None), not zeros.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import sqrt
from typing import Mapping, Sequence

import numpy as np

LEVEL_MAXIMA = (3, 10, 5, 4)
LEVELS = (1, 2, 3, 4)


def exponential_weights(base: int) -> tuple[int, int, int, int]:
    """(base^3, base^2, base, 1): the paper's "exponentially decreasing" weights for one base."""
    return (base**3, base**2, base, 1)


# Named weight sets (spec section 3). The paper's own equation is lost; both are candidates.
EXPONENTIAL_87 = exponential_weights(87)  # (658503, 7569, 87, 1): reproduces both Appendix A.6 examples
TIGHT = (330, 30, 5, 1)  # the smallest integer weights with the dominance property (third-party review)
WEIGHT_SETS: dict[str, tuple[int, int, int, int]] = {"exponential-87": EXPONENTIAL_87, "tight": TIGHT}
WEIGHTS = EXPONENTIAL_87  # the provisional default
DEFAULT_WEIGHT_SET = "exponential-87"
PROVISIONAL_LO = (0.8305, 0.50, 0.25, 0.00)

# Appendix A.6: two worked examples with the paper's printed scores (3 decimals).
A6_EXAMPLES = (((2, 0, 0, 0), 0.947), ((1, 10, 0, 0), 0.870))


def check_weights(weights: Sequence[float], maxima: Sequence[int] = LEVEL_MAXIMA) -> tuple[int, int, int, int]:
    """Four positive integer weights, w4 = 1, each above the largest sum of all less severe levels."""
    try:
        values = tuple(int(w) for w in weights)
    except (TypeError, ValueError):
        raise ValueError(f"Weights {weights!r} must be four integers.") from None
    if len(values) != 4 or any(float(a) != float(b) for a, b in zip(values, weights)):
        raise ValueError(f"Weights {tuple(weights)!r} must be four integers W1,W2,W3,W4.")
    if values[3] != 1:
        raise ValueError(f"w4 must be 1, got {values[3]}.")
    for level in (1, 2, 3):
        below = sum(w * m for w, m in zip(values[level:], maxima[level:]))
        if values[level - 1] <= below:
            raise ValueError(
                f"w{level} = {values[level - 1]} must exceed {below}, the largest sum of all less severe levels "
                "(a more severe attribute outweighs every combination of less severe ones)."
            )
    return values


def weight_set_name(weights: Sequence[int]) -> str:
    """The name of a known weight set, "exponential-B" for (B^3, B^2, B, 1), else "custom"."""
    weights = tuple(int(w) for w in weights)
    for name, known in WEIGHT_SETS.items():
        if known == weights:
            return name
    base = weights[2]
    if weights == exponential_weights(base):
        return f"exponential-{base}"
    return "custom"


@dataclass(frozen=True)
class Bounds:
    """Level boundary intervals [lo(l), hi(l)] that partition [0, 1]: hi(1)=1, hi(l)=lo(l-1), lo(4)=0."""

    lo: tuple[float, float, float, float]

    def __post_init__(self):
        lo = tuple(float(x) for x in self.lo)
        if len(lo) != 4:
            raise ValueError("Bounds need four lower boundaries, one per level.")
        if lo[3] != 0.0:
            raise ValueError("lo(4) must be 0: the intervals partition [0, 1].")
        if not (1.0 > lo[0] > lo[1] > lo[2] > lo[3]):
            raise ValueError(f"Boundaries must satisfy 1 > lo1 > lo2 > lo3 > lo4 = 0, got {lo}.")
        object.__setattr__(self, "lo", lo)

    @classmethod
    def from_inner(cls, lo1: float, lo2: float, lo3: float) -> "Bounds":
        return cls((lo1, lo2, lo3, 0.0))

    @property
    def hi(self) -> tuple[float, float, float, float]:
        return (1.0, self.lo[0], self.lo[1], self.lo[2])


PROVISIONAL = Bounds(PROVISIONAL_LO)


def a6_check(bounds: Bounds, weights: Sequence[int]) -> list[dict]:
    """What a profile gives for the paper's two Appendix A.6 examples, beside the printed numbers."""
    out = []
    for counts, paper in A6_EXAMPLES:
        _, score = severity(counts, bounds, weights)
        out.append({"counts": list(counts), "score": score, "paper": paper,
                    "matches_printed": round(score, 3) == paper})
    return out


# ---------------------------------------------------------------------------------------------
# Labels and consensus (section 2)

VALID_LABELS = (0.0, 0.5, 1.0)


def binarise(value: float) -> int:
    """0.5 -> 0, 1 -> 1, 0 -> 0. Anything else is not a label."""
    if value == 1:
        return 1
    if value == 0 or value == 0.5:
        return 0
    raise ValueError(f"{value!r} is not a valid label (0, 0.5 or 1).")


def consensus(
    labels: Mapping[str, Mapping[str, float]],
    consensus_set: Sequence[str],
    attribute_keys: Sequence[str],
    adjudications: Mapping[str, float] | None = None,
) -> dict[str, int] | None:
    """Ground-truth binary labels for one image.

    `labels` maps annotator -> {attribute key -> label}. An attribute is 1 only when every annotator
    in `consensus_set` says 1. Returns None when any consensus annotator lacks a label for any
    attribute (incomplete: no consensus yet). Adjudications override per attribute and can complete
    an attribute the set has not covered.
    """
    if not consensus_set:
        raise ValueError("The consensus set is empty.")
    adjudications = adjudications or {}
    result: dict[str, int] = {}
    for key in attribute_keys:
        if key in adjudications:
            result[key] = binarise(adjudications[key])
            continue
        values = []
        for annotator in consensus_set:
            value = labels.get(annotator, {}).get(key)
            if value is None:
                return None
            values.append(binarise(value))
        result[key] = int(all(v == 1 for v in values))
    return result


def level_counts(binary_labels: Mapping[str, int], level_of: Mapping[str, int]) -> tuple[int, int, int, int]:
    counts = [0, 0, 0, 0]
    for key, value in binary_labels.items():
        if value == 1:
            counts[level_of[key] - 1] += 1
        elif value != 0:
            raise ValueError(f"binary label {key}={value!r} is not 0 or 1")
    return tuple(counts)


# ---------------------------------------------------------------------------------------------
# The severity score (section 3), per image


def check_counts(counts: Sequence[int], maxima: Sequence[int] = LEVEL_MAXIMA) -> tuple[int, int, int, int]:
    counts = tuple(int(c) for c in counts)
    if len(counts) != 4 or any(c < 0 or c > m for c, m in zip(counts, maxima)):
        raise ValueError(f"Level counts {counts} are outside 0..{tuple(maxima)}.")
    return counts


def determined_level(counts: Sequence[int]) -> int | None:
    """l* = the most severe level with at least one attribute; None when there is none."""
    for level, n in zip(LEVELS, counts):
        if n > 0:
            return level
    return None


def lexicographic(counts: Sequence[int], weights: Sequence[int] = WEIGHTS) -> int:
    return sum(w * n for w, n in zip(weights, counts))


def level_max(level: int, weights: Sequence[int] = WEIGHTS, maxima: Sequence[int] = LEVEL_MAXIMA) -> int:
    return sum(w * m for w, m in zip(weights[level - 1 :], maxima[level - 1 :]))


def stretched_ratio(counts: Sequence[int], weights: Sequence[int] = WEIGHTS, maxima: Sequence[int] = LEVEL_MAXIMA) -> float:
    level = determined_level(counts)
    if level is None:
        return 0.0
    w = weights[level - 1]
    return (lexicographic(counts, weights) - w) / (level_max(level, weights, maxima) - w)


def severity(
    counts: Sequence[int],
    bounds: Bounds = PROVISIONAL,
    weights: Sequence[int] = WEIGHTS,
    maxima: Sequence[int] = LEVEL_MAXIMA,
) -> tuple[int, float]:
    """(level, score) for per-level counts of consensus-positive attributes."""
    counts = check_counts(counts, maxima)
    level = determined_level(counts)
    if level is None:
        return 4, 0.0
    t = stretched_ratio(counts, weights, maxima)
    lo, hi = bounds.lo[level - 1], bounds.hi[level - 1]
    return level, lo + (hi - lo) * sqrt(t)


def level_of_score(score: float, bounds: Bounds) -> int:
    """The level whose interval holds `score`; a value exactly on a boundary belongs to the more severe level."""
    for level in LEVELS[:-1]:
        if score >= bounds.lo[level - 1]:
            return level
    return 4


# ---------------------------------------------------------------------------------------------
# Vectorised paths (whole datasets)


def consensus_array(values: np.ndarray, adjudications: np.ndarray | None = None,
                    abstain: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Consensus for many images at once.

    `values`: float array (annotators, images, attributes) of labels, NaN where missing.
    `adjudications`: optional float array (images, attributes), NaN where there is none.
    `abstain`: optional bool array (annotators, attributes): that annotator never labels that attribute
    (a dataset annotator's attribute its mapping leaves without label, e.g. VISPR on emotion_mental_health);
    or (annotators, images, attributes), per image (an assisted human labeling a profile leaves out).
    It neither votes nor is waited for there; an attribute on which every annotator abstains is covered
    only by an adjudication.
    Returns (binary (images, attributes) int8, complete (images,) bool). Rows that are not complete
    hold zeros and must not be used.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 3:
        raise ValueError("values must be (annotators, images, attributes)")
    present = ~np.isnan(values)
    if abstain is None:
        binary = (values == 1.0).all(axis=0)
        covered = present.all(axis=0)
    else:
        skip = np.asarray(abstain, dtype=bool)
        skip = skip[:, None, :] if skip.ndim == 2 else skip  # (annotators, attributes), or per image too
        voters = (~skip).any(axis=0)  # (1, attributes)
        binary = ((values == 1.0) | skip).all(axis=0) & voters
        covered = (present | skip).all(axis=0) & voters
    if adjudications is not None:
        adj = np.asarray(adjudications, dtype=float)
        has_adj = ~np.isnan(adj)
        binary = np.where(has_adj, adj == 1.0, binary)
        covered = covered | has_adj
    complete = covered.all(axis=1)
    binary = binary & complete[:, None]
    return binary.astype(np.int8), complete


def level_counts_array(binary: np.ndarray, attribute_levels: Sequence[int]) -> np.ndarray:
    """(images, attributes) 0/1 -> (images, 4) per-level counts."""
    levels = np.asarray(attribute_levels)
    onehot = np.stack([(levels == level) for level in LEVELS], axis=1).astype(np.int64)  # (attributes, 4)
    return np.asarray(binary, dtype=np.int64) @ onehot


def severity_array(
    counts: np.ndarray,
    bounds: Bounds = PROVISIONAL,
    weights: Sequence[int] = WEIGHTS,
    maxima: Sequence[int] = LEVEL_MAXIMA,
) -> tuple[np.ndarray, np.ndarray]:
    """(levels int8, scores float64) for an (images, 4) array of per-level counts."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[1] != 4:
        raise ValueError("counts must be (images, 4)")
    maxima_arr = np.asarray(maxima)
    if (counts < 0).any() or (counts > maxima_arr).any():
        raise ValueError(f"Level counts outside 0..{tuple(maxima)}")
    w = np.asarray(weights, dtype=np.int64)
    positive = counts > 0
    empty = ~positive.any(axis=1)
    level = np.where(empty, 4, positive.argmax(axis=1) + 1)
    lexi = counts @ w
    lmax = np.array([level_max(lv, weights, maxima) for lv in LEVELS], dtype=np.int64)
    w_l = w[level - 1]
    t = (lexi - w_l) / (lmax[level - 1] - w_l)
    lo = np.asarray(bounds.lo)[level - 1]
    hi = np.asarray(bounds.hi)[level - 1]
    score = lo + (hi - lo) * np.sqrt(np.where(empty, 0.0, t))
    score = np.where(empty, 0.0, score)
    return level.astype(np.int8), score


# ---------------------------------------------------------------------------------------------
# Fitting boundaries to published scores


@dataclass
class LevelFit:
    level: int
    rows: int
    distinct_t: int
    lo: float | None
    hi: float | None
    max_residual: float | None


@dataclass
class BoundaryFit:
    bounds: Bounds | None
    levels: list[LevelFit]
    max_residual: float | None  # of the resulting profile against every published score
    partition_gaps: dict  # e.g. {"hi(1) vs 1": ..., "hi(2) vs lo(1)": ...}
    level_mismatches: list[int]  # row indices whose published level differs from l*
    problems: list[str]

    @property
    def reproduces(self) -> bool:
        return self.bounds is not None and self.max_residual is not None and self.max_residual < 1e-4 and not self.problems


def _mean(scores: np.ndarray, rows: np.ndarray | None) -> float:
    """The mean score, each row counted `rows` times (plainly when None)."""
    return float(scores.mean() if rows is None else np.average(scores, weights=rows))


def fit_bounds(
    counts: np.ndarray,
    published_scores: np.ndarray,
    published_levels: np.ndarray | None = None,
    weights: Sequence[int] = WEIGHTS,
    maxima: Sequence[int] = LEVEL_MAXIMA,
    rows: np.ndarray | None = None,
) -> BoundaryFit:
    """Fit lo/hi per level by least squares of score on sqrt(t) (spec section 3).

    Within a level the published score must be affine in sqrt(t): score = lo + (hi - lo) * sqrt(t).
    The profile takes lo(1..3) from the fits (lo(4) = 0, hi(l) = lo(l-1)); the reported residual is
    that profile's largest error against the published scores, so it measures what will be used.

    `rows`: how many rows each given row stands for (distinct rows with their counts, as the import reads
    them, so that memory does not grow with the rows); the least squares are then weighted by it, which
    is the fit of the rows written out one by one (to rounding), and the rows per level are counted with it.
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, 4)
    scores = np.asarray(published_scores, dtype=float)
    multiplicity = np.ones(len(scores), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    levels_star = np.array([determined_level(c) or 0 for c in counts], dtype=np.int64)
    t = np.array([stretched_ratio(c, weights, maxima) for c in counts], dtype=float)
    problems: list[str] = []
    fits: list[LevelFit] = []
    for level in LEVELS:
        mask = levels_star == level
        n = int(multiplicity[mask].sum())
        root_t = np.sqrt(t[mask])
        distinct = int(np.unique(np.round(root_t, 12)).size)
        if n == 0:
            fits.append(LevelFit(level, 0, 0, None, None, None))
            continue
        if distinct < 2:
            times = None if rows is None else multiplicity[mask]
            lo = _mean(scores[mask], times) if distinct == 1 and np.allclose(root_t, 0) else None
            fits.append(LevelFit(level, n, distinct, lo, None, None))
            continue
        design = np.column_stack([np.ones(int(mask.sum())), root_t])
        if rows is None:
            (a, b), *_ = np.linalg.lstsq(design, scores[mask], rcond=None)
        else:  # each row's squared residual counted as often as the row: rows scaled by the square root of that
            scale = np.sqrt(multiplicity[mask].astype(float))
            (a, b), *_ = np.linalg.lstsq(design * scale[:, None], scores[mask] * scale, rcond=None)
        resid = float(np.abs(design @ np.array([a, b]) - scores[mask]).max())
        fits.append(LevelFit(level, n, distinct, float(a), float(a + b), resid))

    lo_values = []
    for fit in fits[:3]:
        lo = fit.lo
        if lo is None:
            # A level without rows or variation: take its lower bound from the next level's upper fit.
            nxt = fits[fit.level]
            lo = nxt.hi
        if lo is None:
            problems.append(f"level {fit.level}: not enough published rows to fit its lower boundary")
        lo_values.append(lo)

    bounds = None
    max_residual = None
    if not problems:
        try:
            bounds = Bounds.from_inner(*lo_values)
        except ValueError as exc:
            problems.append(f"fitted boundaries are not a valid partition: {exc}")
    if bounds is not None:
        _, profile_scores = severity_array(counts, bounds, weights, maxima)
        max_residual = float(np.abs(profile_scores - scores).max()) if scores.size else 0.0

    gaps = {}
    expected_hi = [1.0] + [f.lo for f in fits[:3]]
    for fit, want in zip(fits, expected_hi):
        if fit.hi is not None and want is not None:
            gaps[f"hi({fit.level}) - {'1' if fit.level == 1 else f'lo({fit.level - 1})'}"] = fit.hi - want
    if fits[3].lo is not None:
        gaps["lo(4) - 0"] = fits[3].lo

    mismatches: list[int] = []
    if published_levels is not None:
        computed = np.where(levels_star == 0, 4, levels_star)
        mismatches = [int(i) for i in np.nonzero(np.asarray(published_levels) != computed)[0]]
    return BoundaryFit(bounds, fits, max_residual, gaps, mismatches, problems)
