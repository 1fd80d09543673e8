"""VISPR-labelled images for the dataset-version tests: images created directly with their VISPR
split and labels (as import_vispr stores them), with or without stored bytes."""
from __future__ import annotations

from annotations.images import attach, clean_image
from annotations.models import Image
from tests.conftest import png_bytes

SPLIT_OF = {"test2017": "test", "val2017": "train", "train2017": "train"}

# id -> (VISPR split, labels): a small world for the cprt-paper preset.
WORLD = {
    "2017_0001": ("test2017", ["a4_gender", "a9_face_complete"]),  # severe (face)
    "2017_0002": ("test2017", ["a10_face_partial", "a43_medicine"]),  # severe
    "2017_0003": ("test2017", ["a30_credit_card"]),  # severe + level2-no-face
    "2017_0004": ("test2017", ["a49_phone", "a82_date_time"]),  # level2-no-face
    "2017_0005": ("test2017", ["a0_safe"]),  # safe
    "2017_0006": ("test2017", ["a0_safe"]),  # safe
    "2017_0007": ("test2017", ["a0_safe", "a82_date_time"]),  # not alone: nothing
    "2017_0008": ("test2017", ["a59_sports"]),  # nothing
    "2017_0009": ("test2017", ["a16_race", "a9_face_complete"]),  # severe only (face excludes the enrichment)
    "2017_1001": ("val2017", ["a9_face_complete"]),  # other split
    "2017_1002": ("val2017", ["a0_safe"]),
}
PAPER_TEST = {"severe": {"2017_0001", "2017_0002", "2017_0003", "2017_0009"}, "safe": {"2017_0005", "2017_0006"},
              "level2-no-face": {"2017_0003", "2017_0004"}}


def vispr_image(vispr_id: str, vispr_split: str, labels: list[str], *, with_file: bool = False, color=(90, 90, 90)) -> Image:
    image = Image(vispr_id=vispr_id, split=SPLIT_OF.get(vispr_split, "other"), vispr_split=vispr_split,
                  vispr_labels=list(labels), source="vispr test")
    if with_file:
        attach(image, clean_image(png_bytes(color=color)))
    image.save()
    return image


def make_world(with_file: bool = False, order=None) -> dict[str, Image]:
    """The WORLD images, created in `order` (default: as listed)."""
    ids = list(order or WORLD)
    return {vid: vispr_image(vid, *WORLD[vid], with_file=with_file, color=(i % 250, 7, 9)) for i, vid in enumerate(ids)}
