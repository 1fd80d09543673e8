"""A benchmark ended by SIGTERM (as `timeout` ends it) stops its worker and fake server too.

bench/run_throughput.py starts a fake OpenAI server and a Celery worker in their own sessions (a
signal to the benchmark never reaches them). bench/common.py turns SIGTERM into SystemExit, so the
benchmark's cleanup runs; without it both children were left running.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
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


def in_flight(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats", timeout=5) as reply:
            return json.load(reply)["in_flight"]
    except OSError:
        return 0


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
    dropped = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "BENCH_DATABASE_URL", "BENCH_BROKER_URL")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    cmd = [sys.executable, "bench/run_throughput.py", "--images", "4", "--concurrency", "1", "--c1-sample", "0", "--latency", "30",
           "--data-dir", str(tmp_path), "--port", str(port), "--worker-processes", "1", "--server-processes", "1"]
    errors = tmp_path / "bench-stderr.txt"  # a file, not a pipe nobody reads while waiting
    bench = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=errors.open("w"))
    server_marks = ("tests.fakes.openai_server", f"--port {port}")
    worker_marks = ("celery", f"bench-{bench.pid}@")
    try:
        # Both children are up and the run is in flight (the fake answers after 30 s).
        wait_until(lambda: processes_matching(*server_marks) and processes_matching(*worker_marks), 120, "the fake server and the worker")
        wait_until(lambda: (tmp_path / "bench-worker.log").exists(), 30, "the worker log")
        wait_until(lambda: in_flight(port), 120, "a request in flight at the fake server")
        assert bench.poll() is None, errors.read_text()
        bench.send_signal(signal.SIGTERM)
        # The cleanup signals both children at once and waits at most 15 s (+10 s after a SIGKILL).
        try:
            code = bench.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the benchmark did not end within 60 s of SIGTERM; its stderr:\n{errors.read_text()}")
        assert code == 128 + signal.SIGTERM, errors.read_text()
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


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/redis-server").exists() and not shutil.which("redis-server"), reason="redis-server is not installed")
def test_sigterm_ends_the_redis_fault_bench_and_its_private_redis(tmp_path):
    """bench/run_faults.py --case redis starts a redis-server, the fake server, a worker and beat of its own."""
    port = free_port()
    dropped = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CPRT_RATE_LIMIT_URL", "CACHE_URL")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["TMPDIR"] = str(tmp_path)  # its data folder (tempfile.mkdtemp), so that nothing is left elsewhere
    cmd = [sys.executable, "bench/run_faults.py", "--case", "redis", "--database-url", "sqlite://", "--redis-images", "40",
           "--redis-latency", "30", "--port", str(port)]
    bench = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = bench.stdout.readline()  # "private redis redis://127.0.0.1:PORT/0, ..."
    redis_port = first.split("redis://127.0.0.1:", 1)[1].split("/", 1)[0]
    marks = {
        "redis-server": ("redis-server", f"127.0.0.1:{redis_port}"),
        "fake server": ("tests.fakes.openai_server", f"--port {port}"),
        "worker": ("celery", f"bench-redis-{bench.pid}@"),
        "beat": ("celery", "beat", str(tmp_path)),
    }
    try:
        for what, needles in marks.items():
            wait_until(lambda needles=needles: processes_matching(*needles), 180, what)
        time.sleep(3)
        assert bench.poll() is None
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=90) == 128 + signal.SIGTERM
        for what, needles in marks.items():
            wait_until(lambda needles=needles: not processes_matching(*needles), 30, f"the {what} to end")
        assert list(tmp_path.glob("cprt-bench-redis-*")) == []  # its data folder (images, logs) is removed too
    finally:
        if bench.poll() is None:
            bench.kill()
        for needles in marks.values():
            for pid in processes_matching(*needles):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
