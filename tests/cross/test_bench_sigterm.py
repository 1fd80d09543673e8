"""A benchmark ended by SIGTERM (as `timeout` ends it) stops its worker and fake server too.

bench/run_throughput.py starts a fake OpenAI server and a Celery worker in their own sessions (a
signal to the benchmark never reaches them). bench/common.py turns SIGTERM into SystemExit, so the
benchmark's cleanup runs; without it both children were left running.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_matching(*needles: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if all(n in cmdline for n in needles) and "zombie" not in state:
            found.append(int(entry.name))
    return found


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.worker
def test_sigterm_ends_the_benchmark_and_its_children(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "BENCH_DATABASE_URL", "BENCH_BROKER_URL")}
    cmd = [sys.executable, "bench/run_throughput.py", "--images", "4", "--concurrency", "1", "--c1-sample", "0", "--latency", "30",
           "--data-dir", str(tmp_path), "--port", str(port), "--worker-processes", "1", "--server-processes", "1"]
    bench = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    server_marks = ("tests.fakes.openai_server", f"--port {port}")
    worker_marks = ("celery", f"bench-{bench.pid}@")
    try:
        # Both children are up and the run is in flight (the fake answers after 30 s).
        wait_until(lambda: processes_matching(*server_marks) and processes_matching(*worker_marks), 120, "the fake server and the worker")
        wait_until(lambda: (tmp_path / "bench-worker.log").exists(), 30, "the worker log")
        time.sleep(3)
        assert bench.poll() is None, bench.stderr.read()
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=60) == 128 + signal.SIGTERM
        wait_until(lambda: not processes_matching(*server_marks), 30, "the fake server to end")
        wait_until(lambda: not processes_matching(*worker_marks), 30, "the worker to end")
    finally:
        if bench.poll() is None:
            bench.kill()
        for pid in processes_matching(*server_marks) + processes_matching(*worker_marks):  # never leave them behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
