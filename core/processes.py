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
