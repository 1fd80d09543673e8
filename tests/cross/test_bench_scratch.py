"""A benchmark's scratch folder (private images, logs, SQLite files: bench/common.py `scratch_folder`)
is removed when the benchmark ends, also when it is terminated (SIGTERM, as `timeout` sends) or fails."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys, time
from bench.common import scratch_folder
with scratch_folder("cprt-bench-test-", keep=sys.argv[1] == "keep") as folder:
    (folder / "private.png").write_bytes(b"a private image")
    print(folder, flush=True)
    if sys.argv[1] == "fail":
        raise RuntimeError("a check failed")
    time.sleep(60)
"""


def run(mode: str, tmp_path: Path, terminate: bool) -> tuple[int, Path]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    folder = Path(proc.stdout.readline().strip())
    # (a failing bench may already have removed its folder by the time the line is read)
    assert folder.parent == tmp_path and (mode == "fail" or (folder / "private.png").exists())
    if terminate:
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=30), folder


def test_a_terminated_bench_removes_its_scratch_folder(tmp_path):
    code, folder = run("sleep", tmp_path, terminate=True)
    assert code == 128 + signal.SIGTERM and not folder.exists() and list(tmp_path.iterdir()) == []


def test_a_failing_bench_removes_its_scratch_folder(tmp_path):
    code, folder = run("fail", tmp_path, terminate=False)
    assert code == 1 and not folder.exists()


def test_keep_data_keeps_it(tmp_path):
    code, folder = run("keep", tmp_path, terminate=True)
    assert code == 128 + signal.SIGTERM and (folder / "private.png").exists()
