"""Shared by the benchmarks: small distinct images, stored the way every image is (clean_image +
attach), SIGTERM handling, scratch folders that never outlive the bench, and the child processes
and throw-away PostgreSQL databases of the fault benches (bench/run_faults.py, bench/redis_outage.py).

Importing this module makes SIGTERM (what `timeout` and `kill` send) end the benchmark the way Ctrl-C
does: a SystemExit is raised in the main thread, so the benchmark's `finally` blocks run and stop its
worker and fake server (they run in their own sessions, so a signal to the benchmark never reaches
them). A second SIGTERM during that cleanup is ignored; `timeout -k` can still SIGKILL.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent


def _exit_on_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the cleanup finish
    raise SystemExit(128 + signum)


def end_children_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit(143) in this process (main thread only; idempotent)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


end_children_on_sigterm()


def make_run_images(start: int, stop: int) -> None:
    """Images 2017_<start>..2017_<stop-1>: 64x48 PNGs of distinct colours, split "test"."""
    from PIL import Image as PILImage

    from annotations.images import attach, clean_image
    from annotations.models import Image

    for i in range(start, stop):
        buf = io.BytesIO()
        PILImage.new("RGB", (64, 48), (i % 256, (i // 256) % 256, (i * 7) % 256)).save(buf, format="PNG")
        image = Image(vispr_id=f"2017_{i:08d}", split="test", source="bench")
        attach(image, clean_image(buf.getvalue()))
        image.save()


@contextlib.contextmanager
def scratch_folder(prefix: str, keep: bool = False):
    """A temporary folder (the bench's data: private images, logs, SQLite files) removed when the
    block ends, however it ends: normally, on an exception, on Ctrl-C or on SIGTERM (a SystemExit,
    see above). `keep`: left in place, and said so, for a look at the logs."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        if keep:
            print(f"kept {folder}", file=sys.stderr, flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def log_tail(path: Path, lines: int = 40) -> str:
    """The end of a child's log (printed before its folder is removed, when a check failed)."""
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    """A child in its own session (a signal to the bench never reaches it), stderr to `log`."""
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "ab"), start_new_session=True)


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    from core.processes import stop_process

    stop_process(proc, 30, sig=sig)


def admin_url(url: str) -> str:
    return urlsplit(url)._replace(path="/postgres").geturl()


def recreate_database(url: str, drop_only: bool = False) -> None:
    """A fresh PostgreSQL database named by `url` (dropped first), or only dropped."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SystemExit(f"refusing odd database name {name!r}")
    with psycopg.connect(admin_url(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"')


def environment(**overrides: str) -> dict:
    """This process's environment for a child Django process, with `overrides`."""
    env = {k: v for k, v in os.environ.items() if k not in ("CPRT_RATE_LIMIT_URL", "CACHE_URL")}
    env.update({"DJANGO_SETTINGS_MODULE": "cprt_site.settings", "PYTHONPATH": str(ROOT)})
    env.update(overrides)
    return env
