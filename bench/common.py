"""Shared by the run benchmarks: small distinct images, stored the way every image is (clean_image + attach)."""
from __future__ import annotations

import io


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
