"""Pixel operations that remove a face: blur, pixelate or fill each box plus a margin.

Pure functions over Pillow images; the caller detects the boxes (detector.py) and stores the result
(variants.py). The margin is a fraction of the box's own width and height added on each side, so a
margin of 0.2 grows a 100-pixel-wide box to 140 pixels.
"""
from __future__ import annotations

from PIL import Image as PILImage
from PIL import ImageDraw, ImageFilter

METHODS = ("blur", "pixelate", "fill")
DEFAULT_METHOD = "blur"
DEFAULT_MARGIN = 0.2
MAX_MARGIN = 1.0
FILL_COLOUR = (0, 0, 0)
PIXELATE_CELLS = 8  # cells across the region's longer side: nothing of a face survives at that size


def check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    return method


def check_margin(margin: float) -> float:
    if not isinstance(margin, (int, float)) or not 0.0 <= margin <= MAX_MARGIN:
        raise ValueError(f"margin must be a number between 0 and {MAX_MARGIN:g}, not {margin!r}")
    return float(margin)


def region(box, margin: float, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The box grown by `margin` on each side, in whole pixels, clipped to the image."""
    x1, y1, x2, y2 = box[:4]
    dx, dy = (x2 - x1) * margin, (y2 - y1) * margin
    width, height = size
    return (max(0, int(x1 - dx)), max(0, int(y1 - dy)), min(width, int(round(x2 + dx + 0.5))), min(height, int(round(y2 + dy + 0.5))))


def anonymize(img: PILImage.Image, boxes, method: str = DEFAULT_METHOD, margin: float = DEFAULT_MARGIN) -> PILImage.Image:
    """A copy of `img` (RGB) with each box's region removed; pixels outside every region are unchanged."""
    check_method(method)
    check_margin(margin)
    out = img.convert("RGB") if img.mode != "RGB" else img.copy()
    draw = ImageDraw.Draw(out)
    for box in boxes:
        left, top, right, bottom = region(box, margin, out.size)
        if right <= left or bottom <= top:
            continue
        if method == "fill":
            draw.rectangle((left, top, right - 1, bottom - 1), fill=FILL_COLOUR)
            continue
        patch = out.crop((left, top, right, bottom))
        w, h = patch.size
        if method == "pixelate":
            cell = max(1, max(w, h) // PIXELATE_CELLS)
            small = patch.resize((max(1, w // cell), max(1, h // cell)), PILImage.BILINEAR)
            patch = small.resize((w, h), PILImage.NEAREST)
        else:
            # A radius of an eighth of the region's longer side: eyes, nose and mouth are gone
            # (the residual pass finds no face), the colours and the head's outline stay.
            radius = max(2, max(w, h) // 8)
            patch = patch.filter(ImageFilter.GaussianBlur(radius))
        out.paste(patch, (left, top))
    return out
