"""Benchmark: the vectorised scoring path against the per-image pure-Python path, on 1,000,000 images.

Run with `.venv/bin/python bench/scoring.py [--images N]`. Both paths score the same synthetic labels
from two annotators (about 1% of images miss one label, so they have no consensus). Only the
engine calls are timed; turning the arrays into the dicts the per-image path takes is not.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring import engine  # noqa: E402  (pure module: no Django needed)

TAXONOMY = Path(__file__).resolve().parent.parent / "annotations" / "data" / "taxonomy.json"
BOUNDS = engine.Bounds((0.8745, 0.61, 0.33, 0.0))


def synthetic_labels(n_images: int, keys: list[str], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Most attributes absent, as in real data; per image a different density so every level occurs.
    density = rng.choice([0.02, 0.08, 0.2, 0.45], size=(1, n_images, 1))
    u = rng.random((2, n_images, len(keys)))
    values = np.where(u < density, 1.0, np.where(u < density * 1.4, 0.5, 0.0))
    missing = rng.random(n_images) < 0.01
    values[1, missing, rng.integers(0, len(keys), missing.sum())] = np.nan
    return values


def vectorised(values: np.ndarray, attribute_levels: list[int]):
    binary, complete = engine.consensus_array(values)
    counts = engine.level_counts_array(binary, attribute_levels)
    levels, scores = engine.severity_array(counts, BOUNDS)
    return complete, levels, scores


def per_image(values: np.ndarray, keys: list[str], level_of: dict[str, int], chunk: int = 100_000):
    n = values.shape[1]
    complete = np.zeros(n, dtype=bool)
    levels = np.zeros(n, dtype=np.int8)
    scores = np.zeros(n, dtype=float)
    timed = 0.0
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = values[:, start:stop, :].tolist()
        inputs = [
            {a: {k: v for k, v in zip(keys, block[a][i]) if v == v} for a in (0, 1)}  # v == v drops NaN (missing)
            for i in range(stop - start)
        ]
        t0 = time.perf_counter()
        for i, labels in enumerate(inputs):
            binary = engine.consensus(labels, (0, 1), keys)
            if binary is None:
                continue
            level, score = engine.severity(engine.level_counts(binary, level_of), BOUNDS)
            complete[start + i] = True
            levels[start + i] = level
            scores[start + i] = score
        timed += time.perf_counter() - t0
    return timed, complete, levels, scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    args = parser.parse_args()
    data = json.loads(TAXONOMY.read_text())
    attributes = sorted(data["attributes"], key=lambda a: a["order"])
    keys = [a["key"] for a in attributes]
    level_of = {a["key"]: a["level"] for a in attributes}
    values = synthetic_labels(args.images, keys)

    t0 = time.perf_counter()
    complete_v, levels_v, scores_v = vectorised(values, [level_of[k] for k in keys])
    vec_s = time.perf_counter() - t0
    py_s, complete_p, levels_p, scores_p = per_image(values, keys, level_of)

    same_complete = bool((complete_v == complete_p).all())
    same_levels = bool((levels_v[complete_v] == levels_p[complete_v]).all())
    max_diff = float(np.abs(scores_v[complete_v] - scores_p[complete_v]).max())
    bit_equal = bool((scores_v[complete_v].view(np.int64) == scores_p[complete_v].view(np.int64)).all())
    per_level = np.bincount(levels_v[complete_v], minlength=5)[1:]
    print(f"images: {args.images:,} ({int(complete_v.sum()):,} with consensus; levels 1-4: {', '.join(f'{n:,}' for n in per_level)})")
    print(f"vectorised (consensus_array + level_counts_array + severity_array): {vec_s:.3f} s")
    print(f"per-image pure Python (consensus + level_counts + severity):       {py_s:.3f} s")
    print(f"speed-up: {py_s / vec_s:.1f}x")
    print(f"consensus completeness equal: {same_complete}; levels equal: {same_levels}")
    print(f"scores bit-for-bit equal: {bit_equal}; max abs difference: {max_diff:.3g}")
    ok = same_complete and same_levels and bit_equal and py_s / vec_s >= 50
    print("OK" if ok else "FAILED: results differ or the speed-up is below 50x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
