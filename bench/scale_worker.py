"""The scale bench's worker: runs `scoring.refresh_cached` jobs as a Celery worker process would, in a
process of its own, so that its peak memory (VmHWM) is the worker's, not the bench's (issue 37).

Started by bench/scale.py with the bench's environment (DATABASE_URL, CPRT_DATA_DIR). It reads one JSON
line per batch, {"keys": [...]}, resets its peak RSS (`/proc/self/clear_refs` 5), runs every job of the
batch one after the other (and any job a job sends), and answers one JSON line: {"seconds", "cpu_s" (its CPU
time during the batch), "jobs",
"hwm_mb" (the peak RSS during the batch), "rss_mb" (after it), "parts_s" (where some of the jobs given stored part of
their figures and were sent again, run metrics' point estimates first (scoring.services.run_metrics.points_first):
seconds until the jobs given had ended, before those sent again; else null)}. An empty line ends it.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class Worker:
    """This script in a process of its own (bench/scale.py's worker): runs refresh jobs and reports their time and its peak RSS."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__))], cwd=ROOT, env=os.environ.copy(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.started_mb = self._answer()["rss_mb"]
        self.peak_mb = self.started_mb

    def _answer(self) -> dict:
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"the bench worker ended (exit status {self.proc.wait()})")

    def run(self, keys: list[str]) -> dict:
        """Run the jobs (and those they send); {"seconds", "jobs", "hwm_mb", "rss_mb"}."""
        if not keys:
            return {"seconds": 0.0, "cpu_s": 0.0, "jobs": 0, "hwm_mb": 0.0, "rss_mb": 0.0}
        self.proc.stdin.write(json.dumps({"keys": keys}) + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        self.peak_mb = max(self.peak_mb, answer["hwm_mb"])
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=60)


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass


def _cpu_s() -> float:
    """This process's CPU time (user + system): on a shared, loaded machine steadier than the wall time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import django

    django.setup()
    from core import dispatch
    from scoring.services import cache

    queue: list[str] = []
    dispatch._send = lambda task_name, args, kwargs, queue_name, rid: queue.append(args[0])  # a job's own jobs, run here too
    print(json.dumps({"ready": True, "rss_mb": status_mb("VmRSS")}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        queue[:] = json.loads(line)["keys"]
        reset_peak()
        started, cpu, done, again, given, parts = time.perf_counter(), _cpu_s(), 0, False, len(queue), None
        while queue:
            again = cache.refresh(queue.pop(0)).get("again") or again
            done += 1
            if done == given and again:  # the jobs given are done; those sent again (the rest of their figures) follow
                parts = time.perf_counter() - started
        print(json.dumps({"seconds": time.perf_counter() - started, "cpu_s": _cpu_s() - cpu, "jobs": done, "hwm_mb": status_mb("VmHWM"),
                          "rss_mb": status_mb("VmRSS"), "parts_s": parts}), flush=True)


if __name__ == "__main__":
    main()
