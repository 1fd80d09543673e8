"""The one way to stop a child process: SIGTERM, a grace period, then SIGKILL of its process group.

Used by run_demo (web server and worker), the tests' real workers and the benches. Children are
started with ``start_new_session=True`` so that the group holds them and nothing else.
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Callable


def stop_process(proc: subprocess.Popen, timeout: float, *, group: bool = True, sig: int = signal.SIGTERM,
                 on_kill: Callable[[], None] | None = None) -> None:
    """Send `sig` (to the process group when `group`, else to the main process only, e.g. so that
    Celery's warm shutdown stops its own pool), wait `timeout` seconds, then SIGKILL the whole group.
    `on_kill` is called just before the SIGKILL. A process that already ended is left alone."""
    if proc.poll() is not None:
        return
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        if on_kill is not None:
            on_kill()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def stop_processes(procs: list[subprocess.Popen], timeout: float) -> None:
    """Stop several children at once: SIGTERM to every group first, then one shared grace period,
    then SIGKILL for the groups still alive. Stopping them one after another made the waits add up
    (a benchmark's worker waiting on an in-flight request, then its fake server)."""
    import time

    alive = [p for p in procs if p.poll() is None]
    for proc in alive:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    for proc in alive:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
