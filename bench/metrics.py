"""Benchmark of the severity metrics and the leaderboard page.

    .venv/bin/python bench/metrics.py [--runs 50] [--images 6736] [--repeat 3] [--skip-leaderboard] [--only PART]

1. Every metric of one synthetic 6,736-image judge run (levels as in CPRT-Bench's test split) with
   every bootstrap interval, side by side in one process on the same data:
   - "today's path" (`reference_evaluate` below: the implementation before issue 13, kept here as the
     reference): per-resample loops, an O(n log n) Kendall count per resample per level;
   - the new `scoring.metrics.evaluate`: one index draw, every metric of every resample at once.
   The reference is fed the same indices, so the two reports must be identical (checked to 1e-12),
   and today's literal default (500 resamples, 200 for the pairwise metrics, separate draws) is
   timed too. Each path is called --repeat times (default 3), interleaved; the best call of each
   is compared, and the first calls are printed beside.
2. Pairwise ranking accuracy over all ~22.7M image pairs: the O(n log n) count
   (`metrics.pair_counts_by_level`) against a straightforward O(n^2) count over every pair
   (numpy, in row blocks) on the same data in the same process; both must give identical counts.
3. Leaderboard render time through the Django test client with 1 finished judge run and with 50,
   each of 6,736 results, on a throwaway SQLite database (a fresh temporary CPRT_DATA_DIR, migrated
   first). "cold" computes and caches the metrics of new runs; "warm" reads the cache, which is the
   steady state (metrics are recomputed only when a run's results or the ground truth change).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LEVEL_COUNTS = (2860, 1025, 1363, 1488)  # CPRT-Bench test split, levels 1-4


def synthetic_run(n_images: int = sum(LEVEL_COUNTS), seed: int = 0, refusal_rate: float = 0.03):
    """Ground truth from random per-level counts (with the test split's level mix) and a noisy judge."""
    from scoring import engine

    rng = np.random.default_rng(seed)
    shares = np.array(LEVEL_COUNTS) / sum(LEVEL_COUNTS)
    levels = rng.choice([1, 2, 3, 4], size=n_images, p=shares)
    counts = np.zeros((n_images, 4), dtype=np.int64)
    for col, (maximum, p) in enumerate(zip(engine.LEVEL_MAXIMA, (0.3, 0.15, 0.35, 0.4))):
        counts[:, col] = rng.binomial(maximum, p, n_images)
    for col in range(4):
        counts[levels > col + 1, col] = 0  # nothing more severe than the image's level
        at = levels == col + 1
        counts[at, col] = np.maximum(counts[at, col], 1)
    level, gt = engine.severity_array(counts)
    pred = np.clip(np.round(gt + rng.normal(-0.12, 0.2, n_images), 2), 0, 1)
    outcome = np.where(rng.random(n_images) < refusal_rate, "refused", "ok").astype(object)
    pred = np.where(outcome == "ok", pred, np.nan)
    return gt, level.astype(np.int64), pred, outcome


def brute_force_pairs(gt, pred, level, block: int = 512):
    """Every pair i < j, counted directly: (pairs, concordant, discordant, ties) for all/intra/inter."""
    n = gt.size
    totals = {k: np.zeros(4, dtype=np.int64) for k in ("all", "intra", "inter")}
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        cols = np.arange(n)
        upper = cols[None, :] > rows[:, None]
        dg = np.sign(gt[rows, None] - gt[None, :])
        dp = np.sign(pred[rows, None] - pred[None, :])
        differ = upper & (dg != 0)
        same = level[rows, None] == level[None, :]
        s = dg * dp
        for name, mask in (("all", differ), ("intra", differ & same), ("inter", differ & ~same)):
            totals[name] += (mask.sum(), (mask & (s > 0)).sum(), (mask & (s < 0)).sum(), (mask & (s == 0)).sum())
    return {k: tuple(int(x) for x in v) for k, v in totals.items()}


def reference_evaluate(gt, gt_level, pred, outcome, bounds, *, n_boot=500, n_boot_pairwise=200, seed=20260321, idx=None):
    """Today's path (before issue 13), kept as the reference. With `idx`, every metric uses those
    indices (so results can be compared with the new path); without, today's separate draws."""
    from dataclasses import asdict

    from sklearn.metrics import confusion_matrix

    from scoring import metrics as M
    from scoring.engine import LEVELS

    gt, gt_level, pred = np.asarray(gt, float), np.asarray(gt_level, np.int64), np.asarray(pred, float)
    outcome = np.asarray(outcome, dtype=object)
    valid = (outcome == "ok") & np.isfinite(pred)
    g, p, lv = gt[valid], pred[valid], gt_level[valid]
    n = int(g.size)
    report = {"n_valid": n}
    metrics_out = {}
    point = M.point_metrics(g, p, lv, bounds)
    bidx = idx if idx is not None else np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boot = M.basic_metrics(g[bidx], p[bidx], lv[bidx], bounds)
    for name in M.BASIC_METRICS:
        lo, hi = M._interval(boot[name])
        metrics_out[name] = {"value": M._num(point[name]), "lo": lo, "hi": hi}
    pairs = M.pair_counts_by_level(g, p, lv)
    pidx = idx if idx is not None else np.random.default_rng(seed + 1).integers(0, n, size=(n_boot_pairwise, n))
    samples = {k: [] for k in ("all", "intra", "inter")}
    for row in pidx:
        counts = M.pair_counts_by_level(g[row], p[row], lv[row])
        for k in samples:
            samples[k].append(np.nan if counts[k].accuracy is None else counts[k].accuracy)
    for name, k in zip(M.PAIRWISE_METRICS, ("all", "inter", "intra")):
        lo, hi = M._interval(samples[k])
        metrics_out[name] = {"value": pairs[k].accuracy, "lo": lo, "hi": hi}
    report["metrics"] = metrics_out
    report["pairs"] = {k: asdict(v) for k, v in pairs.items()}
    plv = M.predicted_levels(p, bounds)
    report["confusion"] = confusion_matrix(lv, plv, labels=list(LEVELS)).tolist()
    xidx = idx if idx is not None else np.random.default_rng(seed + 2).integers(0, n, size=(n_boot, n))
    binary = {}
    for threshold in M.THRESHOLDS:
        pt = M.binary_metrics_sklearn(lv, plv, threshold)
        bs = M.binary_from_counts(M.binary_counts(lv[xidx], plv[xidx], threshold))
        binary[str(threshold)] = {name: {"value": pt[name], "lo": M._interval(bs[name])[0], "hi": M._interval(bs[name])[1]}
                                  for name in M.BINARY_METRICS}
    report["binary"] = binary
    return report


def _differences(new: dict, ref: dict) -> float:
    """Largest absolute difference between the reference report and the new one (inf if a value is missing)."""
    worst = 0.0

    def cmp(a, b):
        nonlocal worst
        if (a is None) != (b is None):
            worst = float("inf")
        elif a is not None:
            worst = max(worst, abs(float(a) - float(b)))

    for name, m in ref["metrics"].items():
        for key in ("value", "lo", "hi"):
            cmp(new["metrics"][name][key], m[key])
    for t, entry in ref["binary"].items():
        for name, m in entry.items():
            for key in ("value", "lo", "hi"):
                cmp(new["binary"][t][name][key], m[key])
    if new["pairs"] != ref["pairs"] or new["confusion"]["matrix"] != ref["confusion"]:
        worst = float("inf")
    return worst


def bench_metrics(n_images: int, repeat: int = 3) -> None:
    from scoring import engine, metrics, resample

    gt, level, pred, outcome = synthetic_run(n_images)
    bounds = engine.PROVISIONAL
    small = synthetic_run(200, seed=9)  # warm-up: both paths import and touch everything once
    metrics.evaluate(*small[:3], small[3], bounds, n_boot=5)
    reference_evaluate(small[0], small[1], small[2], small[3], bounds, n_boot=5, n_boot_pairwise=5)
    n_valid = int(((outcome == "ok") & np.isfinite(pred)).sum())
    idx = resample.draw(n_valid, metrics.N_BOOT, metrics.SEED)  # the very draw evaluate() makes
    paths = {
        "new": lambda: metrics.evaluate(gt, level, pred, outcome, bounds),
        "same": lambda: reference_evaluate(gt, level, pred, outcome, bounds, idx=idx),
        "today": lambda: reference_evaluate(gt, level, pred, outcome, bounds),
    }
    times = {name: [] for name in paths}
    results = {}
    for _ in range(repeat):  # interleaved, so that a busy neighbour slows every path alike
        for name, call in paths.items():
            started = time.perf_counter()
            results[name] = call()
            times[name].append(time.perf_counter() - started)
    report, ref = results["new"], results["same"]
    t_new, t_ref, t_today = (min(times[name]) for name in ("new", "same", "today"))
    diff = _differences(report, ref)
    print(f"[1] every metric + 95% bootstrap CI of one run: {n_images} images, {report['n_valid']} valid, "
          f"{metrics.N_BOOT} resamples shared by every metric; best of {repeat} calls of each path, interleaved")
    print(f"      today's path, same {metrics.N_BOOT} indices for every metric: {t_ref:.2f} s")
    print(f"      today's path, today's default (500 + 200 pairwise, separate draws): {t_today:.2f} s")
    print(f"      new evaluate(): {t_new:.3f} s (first call {times['new'][0]:.3f} s)   speed-up vs the same-indices "
          f"reference: {t_ref / t_new:.1f}x (vs today's default: {t_today / t_new:.1f}x; first calls "
          f"{times['same'][0] / times['new'][0]:.1f}x and {times['today'][0] / times['new'][0]:.1f}x)   "
          f"largest difference from the reference: {diff:.2e}")
    for name in metrics.ALL_METRICS:
        m = report["metrics"][name]
        print(f"      {name:20s} {m['value']:.4f}  [{m['lo']:.4f}, {m['hi']:.4f}]  defined in {m['defined']}")
    sig = report["significance"]
    print(f"      intra-level ranking: p = {sig['intra']['p_value']:.3g} ({sig['intra']['method']}); "
          f"inter-level: p = {sig['inter']['p_value']:.3g} ({sig['inter']['method']})")
    if diff > 1e-12:
        raise SystemExit("the new path and the reference differ")

    g, lv, p, _ = synthetic_run(n_images, refusal_rate=0.0)  # every image predicted: all n(n-1)/2 pairs
    n = g.size
    started = time.perf_counter()
    fast = metrics.pair_counts_by_level(g, p, lv)
    t_fast = time.perf_counter() - started
    started = time.perf_counter()
    slow = brute_force_pairs(g, p, lv)
    t_slow = time.perf_counter() - started
    equal = all(metrics.astuple(fast[k]) == slow[k] for k in slow)
    print(f"[2] pairwise accuracy over all {n * (n - 1) // 2:,} pairs of {n} images "
          f"({fast['all'].pairs:,} with different ground truth):")
    print(f"      O(n log n): {t_fast * 1000:.1f} ms   O(n^2): {t_slow * 1000:.1f} ms   ratio {t_slow / t_fast:.0f}x   identical counts: {equal}")
    for k in ("all", "inter", "intra"):
        brute_accuracy = (slow[k][1] + 0.5 * slow[k][3]) / slow[k][0]
        print(f"      {k:5s} pairs {fast[k].pairs:>11,}  accuracy {fast[k].accuracy:.6f}  (brute force {brute_accuracy:.6f})")
    if not equal:
        raise SystemExit("O(n log n) and O(n^2) counts differ")


def bench_agreement(n_images: int = 20_000, annotators: int = 4) -> None:
    """The agreement study over n_images x annotators (2 humans, 2 models), cold: the first call in
    this process after the imports, nothing cached."""
    from scoring import agreement

    rng = np.random.default_rng(5)
    keys = [f"a{i}" for i in range(22)]
    levels = [1] * 3 + [2] * 10 + [3] * 5 + [4] * 4
    values = rng.choice([0.0, 0.5, 1.0], size=(annotators, n_images, 22), p=[0.55, 0.15, 0.3])
    values[1] = np.where(rng.random(values[1].shape) < 0.7, values[0], values[1])  # humans agree often
    values[1, rng.random(n_images) < 0.5] = np.nan  # the second human labelled half of the images
    kinds = ["human", "human"] + ["model"] * (annotators - 2)
    data = agreement.LabelSet(values, [f"ann-{i}" for i in range(annotators)], kinds, keys, levels)
    started = time.perf_counter()
    report = agreement.agreement_report(data)
    elapsed = time.perf_counter() - started
    hh = report["human_human"]["overall"]
    print(f"[4] agreement study, {n_images:,} images x {annotators} annotators x 22 attributes, cold: {elapsed:.3f} s "
          f"(target < 1 s: {'met' if elapsed < 1 else 'NOT met'}); human study {report['human_study']['images']:,} images, "
          f"strict {hh['strict']:.3f}, Fleiss' kappa {hh['fleiss_kappa']:.3f}")


def bench_leaderboard(n_runs: int, n_images: int) -> None:
    data_dir = tempfile.mkdtemp(prefix="cprt-bench-")
    os.environ["CPRT_DATA_DIR"] = data_dir
    os.environ.pop("DATABASE_URL", None)  # always a throwaway SQLite database
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment
    from django.urls import reverse

    from annotations.models import Image

    from core.models import Profile
    from inference.models import Run, RunResult

    setup_test_environment()
    call_command("migrate", verbosity=0)
    gt, level, _, _ = synthetic_run(n_images)
    Image.objects.bulk_create(
        [Image(vispr_id=f"2017_{i:08d}", split="test", published_level=int(lv), published_score=float(s), source="bench")
         for i, (lv, s) in enumerate(zip(level, gt))], batch_size=2000,
    )
    image_ids = list(Image.objects.order_by("id").values_list("id", flat=True))
    user = get_user_model().objects.create_user("bench-admin", password="bench-password-123")
    Profile.objects.create(user=user, role="admin")
    client = Client()
    client.force_login(user)
    url = reverse("scoring:leaderboard")

    def add_runs(count: int, offset: int) -> None:
        for r in range(count):
            _, _, pred, outcome = synthetic_run(n_images, seed=offset + r + 1)
            run = Run.objects.create(task="judge", provider="vllm", model_name=f"bench-model-{offset + r}", strategy="taxonomy",
                                     prompt_version="bench", status="finished", image_ids=image_ids, item_ids=image_ids, total=n_images)
            RunResult.objects.bulk_create(
                [RunResult(run=run, item_id=i, image_id=i, outcome=o, score=None if np.isnan(p) else float(p))
                 for i, o, p in zip(image_ids, outcome, pred)], batch_size=5000,
            )

    def render() -> tuple[float, int, int]:
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - started
        assert response.status_code == 200, response.status_code
        return elapsed, len(queries), len(response.content)

    add_runs(1, 0)
    cold_1 = render()
    warm_1 = min(render() for _ in range(5))
    add_runs(n_runs - 1, 1)
    cold_n = render()
    warm_n = min(render() for _ in range(5))
    ranked = len(client.get(url, {"format": "json"}).json()["tables"]["leaderboard"]["rows"])
    print(f"      common-set ranking of {n_runs} runs ({ranked} ranked at the 95% floor) included in every render below")
    print(f"[3] leaderboard via the test client, {n_images} results per run (SQLite in {data_dir}):")
    print(f"      1 run : cold {cold_1[0]:.2f} s ({cold_1[1]} queries)   warm {warm_1[0] * 1000:.0f} ms ({warm_1[1]} queries, {warm_1[2]:,} bytes)")
    print(f"      {n_runs} runs: cold {cold_n[0]:.2f} s ({cold_n[1]} queries, {n_runs - 1} runs computed)   "
          f"warm {warm_n[0] * 1000:.0f} ms ({warm_n[1]} queries, {warm_n[2]:,} bytes)")
    ratio = warm_n[0] / warm_1[0]
    print(f"      warm {n_runs} runs / warm 1 run = {ratio:.2f}x (target within 3x: {'met' if ratio <= 3 else 'NOT met'}); "
          f"cold cost per new run {(cold_n[0]) / (n_runs - 1):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=sum(LEVEL_COUNTS))
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--skip-leaderboard", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="calls of each evaluate() path (the best is reported)")
    parser.add_argument("--only", choices=("metrics", "agreement", "leaderboard"), help="run one part")
    args = parser.parse_args()
    if args.only == "agreement":
        return bench_agreement()
    if args.only == "metrics":
        return bench_metrics(args.images, args.repeat)
    if args.only == "leaderboard":
        return bench_leaderboard(args.runs, args.images)
    bench_metrics(args.images, args.repeat)
    bench_agreement()
    if not args.skip_leaderboard:
        bench_leaderboard(args.runs, args.images)


if __name__ == "__main__":
    main()
