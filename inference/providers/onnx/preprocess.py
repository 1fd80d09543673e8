"""Image bytes -> the float tensor an S2P-like classifier takes, with numpy and Pillow only.

S2P_PREPROCESSING is upstream's transform (graphnex/privacy-from-visual-entities,
srcs/datasets/imageprivacy.py `set_img_transform` and `load_image`): `Image.open(...).convert("RGB")`,
`transforms.Resize((448, 448))` (both sides to 448, aspect ratio not kept; on a PIL image torchvision
calls Pillow's bilinear resize), `ToTensor()` (HWC uint8 -> CHW float in [0, 1]) and
`Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])` (ImageNet). On the same bytes, the
same steps here give the same numbers as torchvision on the same Pillow (tools/s2p_to_onnx.py --verify
checks it; tests/inference/test_classifier_input.py pins one image against a reimplementation).

The bytes are not the same as upstream's [decision, docs/classifiers.md]: a binary run reads the
workbench's stored copy of an image (annotations/images.py `clean_image`: EXIF orientation applied,
a JPEG re-encoded at quality 95 without metadata), while upstream's loader reads the release file as
it is, without EXIF rotation. The originals are not kept (their metadata may hold GPS positions), so
the run records this difference (`INPUT_BYTES`, in the run's request parameters) instead.
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image as PILImage

S2P_PREPROCESSING = {
    "resize": [448, 448],  # (width, height); the aspect ratio is not kept, as upstream
    "resample": "bilinear",
    "color": "RGB",
    "scale": 1 / 255,
    "mean": [0.485, 0.456, 0.406],
    "std": [0.229, 0.224, 0.225],
    "layout": "NCHW",
    "source": "graphnex/privacy-from-visual-entities srcs/datasets/imageprivacy.py set_img_transform(img_size=448)",
}

INPUT_BYTES = ("the stored copy of each image (EXIF orientation applied; JPEGs re-encoded at quality 95 without metadata), "
               "not the release file upstream's loader reads: P(private) can differ from upstream's by a few hundredths "
               "on a pixel-sensitive model (docs/classifiers.md)")

_RESAMPLE = {"bilinear": PILImage.Resampling.BILINEAR}


def tensor(data: bytes, spec: dict) -> np.ndarray:
    """One image as a (3, H, W) float32 array, or ValueError when the bytes are not a readable image."""
    try:
        with PILImage.open(io.BytesIO(data)) as img:
            rgb = img.convert(spec["color"])
            resized = rgb.resize(tuple(spec["resize"]), _RESAMPLE[spec["resample"]])
    except (OSError, ValueError, PILImage.DecompressionBombError) as exc:
        raise ValueError(f"the image could not be decoded: {exc}") from None
    array = np.asarray(resized, dtype=np.float32) * np.float32(spec["scale"])
    array = (array - np.asarray(spec["mean"], dtype=np.float32)) / np.asarray(spec["std"], dtype=np.float32)
    return np.ascontiguousarray(array.transpose(2, 0, 1))
