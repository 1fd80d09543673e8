"""Benchmark: CPRT-Bench import (validate, store, fit, rescore) and Hugging Face export, rows/s and peak memory.

Run with `.venv/bin/python bench/import_export.py`. Each measurement runs in a child process with a
throwaway SQLite database under a fresh CPRT_DATA_DIR (migrated first), with DEBUG off as in
production: once for time, once under
tracemalloc for the Python heap peak (tracemalloc slows Python down, so it is not timed). The file
sizes are 6,736 rows (CPRT-Bench's test split) and three times that, to show memory stays flat.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import secrets
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (6_736, 3 * 6_736)


def write_bench_file(path: Path, n_rows: int, seed: int = 0) -> None:
    from annotations import taxonomy
    from scoring import engine

    tax = taxonomy.from_file()
    bounds = engine.Bounds((0.8745, 0.61, 0.33, 0.0))
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_rows):
            p = rng.choice([0.03, 0.1, 0.25, 0.5])
            flat = {key: int(rng.random() < p) for key in tax.keys}
            level, score = engine.severity(engine.level_counts(flat, tax.level_of), bounds)
            row = {
                "id": f"2017_{10000000 + i}",
                "binary_labels": {f"level{lv}": {k: flat[k] for k in tax.keys_of_level(lv)} for lv in engine.LEVELS},
                "level": level,
                "score": round(score, 6),
            }
            fh.write(json.dumps(row) + "\n")


def child(n_rows: int, trace: bool) -> dict:
    import django

    django.setup()
    from django.core.management import call_command

    from scoring import cprt_bench

    call_command("migrate", verbosity=0)
    data_dir = Path(os.environ["CPRT_DATA_DIR"])
    source = data_dir / "bench.jsonl"
    write_bench_file(source, n_rows)
    result = {"rows": n_rows, "file_mb": round(source.stat().st_size / 1e6, 2)}
    if trace:
        tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    imported = cprt_bench.import_bench_file(source, "test")
    result["import_s"] = time.perf_counter() - t0
    result["import_cpu_s"] = time.process_time() - c0  # CPU time: steadier than wall time on a busy machine
    if trace:
        result["import_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.reset_peak()
    t0 = time.perf_counter()
    summary = cprt_bench.export_dataset(data_dir / "hf", ["test"])
    result["export_s"] = time.perf_counter() - t0
    if trace:
        result["export_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    result["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    result["exported_rows"] = summary["splits"]["test"]["rows"]
    result["max_residual"] = imported.fit.max_residual
    result["activated"] = imported.activated
    return result


def run_child(n_rows: int, trace: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="cprt-bench-") as data_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
        env |= {"CPRT_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "LOG_LEVEL": "WARNING"}
        # Production settings: with DEBUG on, Django keeps the SQL of recent queries, which is not what we measure.
        env |= {"DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48), "ALLOWED_HOSTS": "localhost"}
        args = [sys.executable, __file__, "--child", str(n_rows)] + (["--trace"] if trace else [])
        done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"child failed:\n{done.stderr}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=int)
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        print(json.dumps(child(args.child, args.trace)))
        return 0
    print("rows    file MB  import rows/s  export rows/s  import peak MB  export peak MB  max RSS MB  residual  activated")
    for n_rows in SIZES:
        timed = run_child(n_rows, trace=False)
        traced = run_child(n_rows, trace=True)
        print(
            f"{n_rows:<7} {timed['file_mb']:>7}  {n_rows / timed['import_s']:>13,.0f}  {timed['exported_rows'] / timed['export_s']:>13,.0f}"
            f"  {traced['import_peak_mb']:>14.1f}  {traced['export_peak_mb']:>14.1f}  {timed['max_rss_mb']:>10.0f}"
            f"  {timed['max_residual']:.1e}  {timed['activated']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
