"""Benchmark: how fast the project starts, for one or more source trees side by side.

    .venv/bin/python bench/startup.py [--compare /tmp/old-tree] [--repeat 3] [--demo]

Per tree it prints the median of `--repeat` fresh processes for:
- `manage.py check` (wall seconds; it loads every URL, so every view module);
- `django.setup()` (seconds, and the process's peak RSS after it);
- a web worker's start: setup plus every URL loaded (seconds, peak RSS), what the first request pays;
- with `--demo`, a second `manage.py run_demo` start (the database already migrated and seeded):
  seconds from launch until `/healthz` answers 200 (the first start, which seeds, is not timed).
The trees are measured in turns (old, new, old, new, ...) so a busy machine weighs on both alike.
Every tree runs on this checkout's virtual environment, each with its own data folder.
Make the old tree with `git archive <commit> | tar -x -C /tmp/old-tree`.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import common  # noqa: F401 - SIGTERM ends the benchmark cleanly

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

PROBE = """
import json, resource, sys, time
started = time.perf_counter()
import django
django.setup()
setup = time.perf_counter() - started
setup_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from django.urls import get_resolver
get_resolver().url_patterns
ready = time.perf_counter() - started
heavy = sorted(m for m in sys.modules if m in ("sklearn", "scipy", "datasets", "pandas", "openai", "google.genai"))
print(json.dumps({"setup_s": setup, "setup_rss_mb": setup_rss, "ready_s": ready,
                  "ready_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "heavy": heavy}))
"""


def _env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    return {**env, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "CPRT_DATA_DIR": str(data_dir), "PYTHONDONTWRITEBYTECODE": "0"}


def check_seconds(tree: Path, data_dir: Path) -> float:
    started = time.perf_counter()
    subprocess.run([PYTHON, "manage.py", "check"], cwd=tree, env=_env(data_dir), check=True, capture_output=True)
    return time.perf_counter() - started


def probe(tree: Path, data_dir: Path) -> dict:
    out = subprocess.run([PYTHON, "-c", PROBE], cwd=tree, env=_env(data_dir), check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_start_seconds(tree: Path, data_dir: Path, timeout: float = 180.0) -> float:
    """Seconds from `run_demo` launch until /healthz answers 200; the demo is then stopped."""
    port = _free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "manage.py", "run_demo", "--port", str(port)], cwd=tree, env=_env(data_dir),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"run_demo in {tree} exited with {proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
                    if response.status == 200:
                        return time.perf_counter() - started
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"run_demo in {tree} did not answer within {timeout:.0f}s")
    finally:
        proc.send_signal(signal.SIGTERM)  # run_demo stops its web server and worker itself
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="append", default=[], type=Path, help="another source tree to measure (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--demo", action="store_true", help="also time a second run_demo start (slow: seeds once per tree)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trees = [*args.compare, ROOT]
    work = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    data = {tree: work / f"data-{i}" for i, tree in enumerate(trees)}
    for tree in trees:  # migrate once per tree (and seed, for --demo), untimed
        if args.demo:
            demo_start_seconds(tree, data[tree])
        else:
            subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=tree, env=_env(data[tree]), check=True, capture_output=True)
    samples: dict[Path, dict[str, list]] = {tree: {} for tree in trees}
    for _ in range(args.repeat):
        for tree in trees:
            got = samples[tree]
            got.setdefault("check_s", []).append(check_seconds(tree, data[tree]))
            for key, value in probe(tree, data[tree]).items():
                got.setdefault(key, []).append(value)
            if args.demo:
                got.setdefault("demo_start_s", []).append(demo_start_seconds(tree, data[tree]))
    report = {}
    for tree in trees:
        got = samples[tree]
        report[str(tree)] = {k: (statistics.median(v) if k != "heavy" else v[-1]) for k, v in got.items()}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    columns = ["check_s", "setup_s", "setup_rss_mb", "ready_s", "ready_rss_mb"] + (["demo_start_s"] if args.demo else [])
    print(f"median of {args.repeat}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'tree':<40}" + "".join(f"{c:>14}" for c in columns) + "  heavy modules after start")
    for tree, row in report.items():
        print(f"{tree[-40:]:<40}" + "".join(f"{row[c]:>14.2f}" for c in columns) + f"  {','.join(row['heavy']) or '-'}")


if __name__ == "__main__":
    main()
