"""Real photographs in the demo, so that the face pages have faces to find and anonymize: scikit-image's
sample data (`skimage.data`), shipped inside its wheel and read offline. The astronaut portrait (NASA,
public domain), the cat and the coffee cup (CC0), and faces from the Labeled Faces in the Wild subset
that scikit-image ships (public figures, 25 x 25 pixels, enlarged). Each `photo_*` function makes one
320 x 240 demo scene; drawn parts come from demo.painting."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image as PILImage

from . import painting

W, H = painting.WIDTH, painting.HEIGHT


def _data():
    from skimage import data  # imported where used: seeding the demo only

    return data


@lru_cache(maxsize=None)
def _astronaut() -> PILImage.Image:
    return PILImage.fromarray(_data().astronaut()).convert("RGB")


def _astronaut_head(width: int, height: int) -> PILImage.Image:
    return _astronaut().crop((120, 10, 360, 300)).resize((width, height), PILImage.LANCZOS)


@lru_cache(maxsize=None)
def _lfw() -> np.ndarray:
    return _data().lfw_subset()


def _lfw_face(index: int, size: int) -> PILImage.Image:
    """Face `index` of the LFW subset (grey, 25 px; its first 100 images are faces), enlarged to `size`
    pixels and tinted like a print."""
    grey = PILImage.fromarray((_lfw()[index] * 255).astype("uint8")).resize((size, size), PILImage.BICUBIC)
    return PILImage.merge("RGB", [grey.point(lambda v: min(255, int(v * k))) for k in (1.04, 1.0, 0.92)])


def _fit(img: PILImage.Image) -> PILImage.Image:
    """Scale to cover 320 x 240 and crop the middle."""
    factor = max(W / img.width, H / img.height)
    big = img.resize((max(W, round(img.width * factor)), max(H, round(img.height * factor))), PILImage.LANCZOS)
    left, top = (big.width - W) // 2, (big.height - H) // 2
    return big.crop((left, top, left + W, top + H))


def photo_selfie(rng) -> PILImage.Image:
    return _astronaut().resize((W, W), PILImage.LANCZOS).crop((0, 10, W, 10 + H))


def photo_id_card(rng) -> PILImage.Image:
    img = painting.draw_id_card(rng)
    img.paste(_astronaut_head(90, 110), (34, 74))
    return img


def photo_passport(rng) -> PILImage.Image:
    img = painting.draw_passport(rng)
    img.paste(_lfw_face(11, 96), (26, 52))
    return img


def photo_family(rng) -> PILImage.Image:
    img = PILImage.new("RGB", (W, H), (200, 225, 200))
    for index, x, y, size in ((3, 20, 30, 86), (60, 117, 22, 92), (47, 220, 40, 80)):
        img.paste(_lfw_face(index, size), (x, y))
    draw = painting.ImageDraw.Draw(img)
    painting._text(draw, (10, 200), "Christmas 2023 - the whole family", 12, (120, 40, 40))
    return img


def photo_pet(rng) -> PILImage.Image:
    return _fit(PILImage.fromarray(_data().chelsea()).convert("RGB"))


def photo_food(rng) -> PILImage.Image:
    return _fit(PILImage.fromarray(_data().coffee()).convert("RGB"))
