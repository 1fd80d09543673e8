"""bench/vispr_import.py ended by SIGTERM (as `timeout` ends it) stops its import child and removes the
generated release folder and its throwaway data folder."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def children(needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if needle in cmdline and "zombie" not in state:
            found.append(int(entry.name))
    return found


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigterm_ends_the_vispr_bench_and_its_child(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    env["TMPDIR"] = str(tmp_path)  # the bench's temporary folders go here, so that the test sees them go
    bench = subprocess.Popen([sys.executable, "bench/vispr_import.py", "--images", "1500"], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    child_mark = f"--child {tmp_path}"
    try:
        child = wait_until(lambda: children(child_mark), 120, "the import child")
        # Signalled once the child works in its data folder (its database is there), not while it starts.
        wait_until(lambda: any(tmp_path.glob("vispr-bench-*/*")), 120, "the child's data folder to fill")
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=60) != 0
        wait_until(lambda: not children(child_mark), 30, f"the child {child} to end")
        left = list(tmp_path.iterdir())
        assert left == [], f"left behind: {left}; the bench's stderr: {bench.stderr.read()[-3000:]}"  # release and data folders removed
    finally:
        if bench.poll() is None:
            bench.kill()
        for pid in children(child_mark):
            os.kill(pid, signal.SIGKILL)
