"""CPU time of scoring.metrics.evaluate() with few and with many distinct predicted scores (issue 29).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/evaluate_cpu.py [--images 20000 100000] [--repeat 4]

The data are bench/synthetic.py's synthetic_scores: the same ground truth, predictions rounded to 2
decimals (101 distinct values, "few") or left continuous ("many"). Each case is timed with
time.process_time (CPU time of this process: the machine is shared, wall time is noisy), calls of
the two cases interleaved, and the best of --repeat calls is printed with the ratio many / few.
Run it with one BLAS/OpenMP thread so that CPU time is one core's time.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # before bench/: the project's `scoring`, not bench/scoring.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args()

    from synthetic import synthetic_scores

    from scoring import engine, metrics

    for n in args.images:
        data = {}
        for label, many in (("few", False), ("many", True)):
            gt, lv, pred = synthetic_scores(n, many)
            data[label] = (gt, lv, pred, np.array(["ok"] * n, dtype=object))
        gt, lv, pred, outcome = data["few"]
        metrics.evaluate(gt[:100], lv[:100], pred[:100], outcome[:100], engine.PROVISIONAL)  # imports
        best = {label: float("inf") for label in data}
        for _ in range(args.repeat):
            for label, (gt, lv, pred, outcome) in data.items():
                started = time.process_time()
                metrics.evaluate(gt, lv, pred, outcome, engine.PROVISIONAL)
                best[label] = min(best[label], time.process_time() - started)
        distinct = {label: int(np.unique(d[2]).size) for label, d in data.items()}
        print(f"{n:>7} images: few ({distinct['few']} distinct) {best['few']:.2f} s, "
              f"many ({distinct['many']} distinct) {best['many']:.2f} s, ratio {best['many'] / best['few']:.2f}x",
              flush=True)


if __name__ == "__main__":
    main()
