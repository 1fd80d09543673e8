"""Every process of the project computes its figures on one BLAS / OpenMP thread unless the environment
names another number (cprt_site/threads.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import cprt_site, numpy, scipy.linalg, threadpoolctl, json; print(json.dumps(threadpoolctl.threadpool_info()))"


def _pools(**env) -> list[dict]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_process_of_the_project_uses_one_thread_per_numeric_library():
    pools = _pools()
    assert pools, "no BLAS or OpenMP library found"
    assert {p["num_threads"] for p in pools} == {1}, pools


def test_the_operators_number_wins():
    pools = [p for p in _pools(OPENBLAS_NUM_THREADS="2") if p["internal_api"] == "openblas"]
    assert pools and {p["num_threads"] for p in pools} == {2}, pools
