"""Benchmark of face anonymization: images per second at 1024 px on this machine.

    .venv/bin/python bench/anonymize.py [--images 12] [--threads N]

Each image is the full work of one variant (`annotations.faces.variants.compute`): decode, CenterFace
detection at DETECT_MAX_SIDE, blur, re-encode through clean_image, and the residual detection pass on
the re-encoded bytes. The photographs are scikit-image's (astronaut, coffee, chelsea, rocket), resized
to 1024 px on the longer side and stored as JPEG. Measured twice:

1. single: one image after the other in one thread;
2. pool: the job's pool (annotations/faces/jobs.py), `--threads` (default CPRT_FACES_THREADS) threads
   sharing one onnxruntime session, as a worker runs a job.

No database: the storage writes that a job adds are a few milliseconds per image. SIGTERM ends it.
"""
from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def photos(n: int) -> list[bytes]:
    from PIL import Image as PILImage
    from skimage import data

    sources = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    out = []
    for i in range(n):
        img = PILImage.fromarray(sources[i % len(sources)])
        factor = 1024 / max(img.size)
        img = img.resize((round(img.width * factor), round(img.height * factor)), PILImage.BILINEAR)
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=92)
        out.append(buf.getvalue())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=12)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("CPRT_DATA_DIR", tempfile.mkdtemp(prefix="cprt-bench-anonymize-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
    import django

    django.setup()
    from django.conf import settings

    from annotations.faces import detector, variants

    threads = args.threads or settings.CPRT_FACES_THREADS
    images = photos(args.images)
    t0 = time.perf_counter()
    detector.session()
    print(f"detector: {detector.detector_name()}; session loaded in {time.perf_counter() - t0:.2f} s; "
          f"{os.cpu_count()} CPUs; {args.images} images at 1024 px")

    def one(raw: bytes):
        return variants.compute(raw, "jpg", "blur", detector.DEFAULT_THRESHOLD, 0.2, "bench image")

    one(images[0])  # warm-up: the first run allocates onnxruntime's buffers
    t0 = time.perf_counter()
    results = [one(raw) for raw in images]
    single = time.perf_counter() - t0
    faces = sum(len(r.boxes) for r in results)
    residual = sum(len(r.residual_boxes) for r in results)
    print(f"single: {args.images / single:.2f} images/s ({1000 * single / args.images:.0f} ms per image); "
          f"faces {faces}, residual {residual}")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        pooled = list(pool.map(one, images))
    elapsed = time.perf_counter() - t0
    assert [len(r.boxes) for r in pooled] == [len(r.boxes) for r in results]
    print(f"pool ({threads} threads): {args.images / elapsed:.2f} images/s ({1000 * elapsed / args.images:.0f} ms per image); "
          f"speed-up {single / elapsed:.2f}x")


if __name__ == "__main__":
    main()
