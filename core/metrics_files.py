"""prometheus_client's multiprocess mode, switched on from settings before any metric exists.

Each process writes its counter values to files in one folder, named by host name and pid: the web
and worker containers share the folder (compose: the data volume) and both number their processes
from 1, so the pid alone would make two processes write one file. A scrape sums every file
(core/metrics.py). Files of processes that ended keep their counts, as counters should; the folder
may be emptied while the whole stack is stopped (docs/operations.md).
"""
from __future__ import annotations

import os
import socket


def use_shared_files(folder: str) -> None:
    from prometheus_client import values

    os.makedirs(folder, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    values.ValueClass = values.MultiProcessValue(lambda: f"{socket.gethostname()}_{os.getpid()}")
