"""Synthetic arrays for the scoring benches (no database): CPRT scores with few or many distinct
predicted values, evaluate() on them, and the agreement study on random labels (bench/scale.py,
bench/evaluate_cpu.py)."""
from __future__ import annotations

import time

import numpy as np


def synthetic_scores(n: int, many: bool, seed: int = 0):
    from scoring import engine

    rng = np.random.default_rng(seed)
    counts = np.zeros((n, 4), dtype=int)
    levels = rng.integers(1, 5, n)
    for col, m in enumerate(engine.LEVEL_MAXIMA):
        counts[:, col] = rng.integers(0, m + 1, n)
        counts[levels > col + 1, col] = 0
        counts[levels == col + 1, col] = np.maximum(counts[levels == col + 1, col], 1)
    lv, gt = engine.severity_array(counts)
    pred = np.clip(gt + rng.normal(0, 0.15, n), 0, 1)
    if not many:
        pred = np.round(pred, 2)  # 101 distinct values
    return gt, lv.astype(np.int64), pred


def bench_evaluate(n: int) -> dict:
    from scoring import engine, metrics

    out = {}
    for label, many in (("few", False), ("many", True)):
        gt, lv, pred = synthetic_scores(n, many)
        outcome = np.array(["ok"] * n, dtype=object)
        metrics.evaluate(gt[:100], lv[:100], pred[:100], outcome[:100], engine.PROVISIONAL)  # imports
        started = time.perf_counter()
        metrics.evaluate(gt, lv, pred, outcome, engine.PROVISIONAL)
        out[label] = {"seconds": time.perf_counter() - started, "distinct": int(np.unique(pred).size)}
    return out


def bench_agreement(sizes=(20_000, 100_000), annotators: int = 4) -> dict:
    from annotations import taxonomy
    from scoring import agreement

    tax = taxonomy.active()
    keys = list(tax.keys)
    out = {}
    for n in sizes:
        rng = np.random.default_rng(n)
        values = rng.choice([0.0, 0.5, 1.0], size=(annotators, n, len(keys)), p=[0.7, 0.1, 0.2])
        values[1, rng.random(n) < 0.1] = np.nan  # the second reviewer missed 10%
        data = agreement.LabelSet(values=values, names=[f"a{i}" for i in range(annotators)],
                                  kinds=["human", "human", "model", "model"][:annotators], keys=keys,
                                  attr_levels=[tax.level_of[k] for k in keys], image_ids=list(range(n)),
                                  annotator_ids=list(range(annotators)))
        started = time.perf_counter()
        agreement.agreement_report(data)
        out[f"{n // 1000}k x {annotators}"] = time.perf_counter() - started
    return out
