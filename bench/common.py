"""Shared by the benchmarks: small distinct images, stored the way every image is (clean_image +
attach), and SIGTERM handling.

Importing this module makes SIGTERM (what `timeout` and `kill` send) end the benchmark the way Ctrl-C
does: a SystemExit is raised in the main thread, so the benchmark's `finally` blocks run and stop its
worker and fake server (they run in their own sessions, so a signal to the benchmark never reaches
them). A second SIGTERM during that cleanup is ignored; `timeout -k` can still SIGKILL.
"""
from __future__ import annotations

import io
import signal
import threading


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
