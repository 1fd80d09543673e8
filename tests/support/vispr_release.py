"""A small VISPR release folder in the authors' layout (spec vispr-and-benchmarks.md §1), for tests.

`write_release(root, {"test2017": {"2017_1": ["a4_gender"]}, ...})` writes images/<split>/<id>.jpg (a
distinct small JPEG each), annotations/<split>/<id>.json, <split>.txt and attributes.tsv (ATTRIBUTES:
a header line and a few of VISPR's ids, with the unmapped a2_weight among them).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image as PILImage

ATTRIBUTES = [
    ("a0_safe", "Safe"), ("a1_age_approx", "Approximate age"), ("a2_weight_approx", "Weight (approx.)"),
    ("a4_gender", "Gender"), ("a9_face_complete", "Full face"), ("a10_face_partial", "Partial face"),
    ("a30_credit_card", "Credit card"), ("a31_passport", "Passport"), ("a43_medicine", "Medical treatment"),
    ("a73_landmark", "Landmark"), ("a82_date_time", "Date/time"),
]


def jpeg(seed: int, size=(24, 16)) -> bytes:
    img = PILImage.new("RGB", size, ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def write_attributes(root: Path, attributes=ATTRIBUTES) -> None:
    lines = ["idx\tattribute_id\tdescription"] + [f"{i}\t{a}\t{d}" for i, (a, d) in enumerate(attributes)]
    (root / "attributes.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_annotation(root: Path, split: str, vispr_id: str, labels, **extra) -> Path:
    folder = root / "annotations" / split
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{vispr_id}.json"
    data = {"id": vispr_id, "image_path": f"images/{split}/{vispr_id}.jpg", "labels": list(labels), **extra}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_release(root: Path, splits: dict[str, dict[str, list[str]]], *, lists: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_attributes(root)
    seed = 1
    for split, images in splits.items():
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "annotations" / split).mkdir(parents=True, exist_ok=True)
        for vispr_id, labels in images.items():
            (root / "images" / split / f"{vispr_id}.jpg").write_bytes(jpeg(seed))
            seed += 1
            write_annotation(root, split, vispr_id, labels)
        if lists:
            (root / f"{split}.txt").write_text("".join(f"annotations/{split}/{v}.json\n" for v in images), encoding="utf-8")
    return root
