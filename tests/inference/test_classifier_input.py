"""A binary run's P(private) is upstream's function of the stored bytes (issue 34): one image's value from a
run equals a numpy/PIL reimplementation of upstream's `load_image` and `set_img_transform(448)`
(graphnex/privacy-from-visual-entities) on the same tiny ONNX model, and the run states that it read the
stored copy, not the release file."""
from __future__ import annotations

import io
import json
from io import StringIO

import numpy as np
import onnxruntime
import pytest
from django.core.management import call_command
from PIL import Image as PILImage

from annotations.images import attach, clean_image
from annotations.models import Image
from inference.models import ClassifierModel, Run, RunResult
from tests.support.classifiers import tiny_classifier

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def upstream_tensor(data: bytes) -> np.ndarray:
    """Upstream's loader and transform, step by step as torchvision does them on a PIL image."""
    img = PILImage.open(io.BytesIO(data)).convert("RGB")  # srcs/datasets/imageprivacy.py load_image
    img = img.resize((448, 448), PILImage.BILINEAR)  # transforms.Resize((448, 448)): PIL's resize, (w, h)
    x = np.asarray(img, dtype=np.uint8).transpose(2, 0, 1).astype(np.float32) / np.float32(255)  # ToTensor: .float().div(255)
    return (x - IMAGENET_MEAN) / IMAGENET_STD  # Normalize(mean, std)


def upstream_p_private(data: bytes, model_file) -> float:
    session = onnxruntime.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    probabilities = session.run(None, {"image": upstream_tensor(data)[None]})[0][0]
    return float(probabilities[0])  # classes private,public


def gradient_jpeg() -> bytes:
    """A 640 x 360 JPEG whose pixels vary (a bilinear resize of it is not its mean)."""
    y, x = np.mgrid[0:360, 0:640]
    rgb = np.stack([(x * 255 // 639), (y * 255 // 359), ((x + y) % 256)], axis=-1).astype(np.uint8)
    rgb[100:200, 50:400] = (250, 20, 20)
    out = io.BytesIO()
    PILImage.fromarray(rgb).save(out, format="JPEG", quality=90)
    return out.getvalue()


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # --here works the lanes on threads of their own
def test_p_private_equals_upstreams_transform_on_the_stored_bytes(data_dir, tmp_path):
    model_file = tiny_classifier(tmp_path / "tiny.onnx")
    call_command("register_classifier", "tiny-s2p", str(model_file), "--classes", "private,public", stdout=StringIO())
    assert ClassifierModel.objects.filter(name="tiny-s2p").exists()
    image = Image(vispr_id="2017_34000001", split="test", source="test")
    attach(image, clean_image(gradient_jpeg()))
    image.save()

    out = StringIO()
    call_command("launch_run", "--kind", "binary", "--provider", "onnx", "--model", "tiny-s2p", "--here", "--json", stdout=out)
    run = Run.objects.get(pk=json.loads(out.getvalue())["id"])
    assert run.status == "finished"
    score = RunResult.objects.get(run=run, image=image).score

    with image.file.open("rb") as fh:
        stored = fh.read()
    expected = upstream_p_private(stored, model_file)
    assert score == pytest.approx(expected, abs=1e-6)
    # the resize matters here: the mean of the full-size pixels gives another value
    full = np.asarray(PILImage.open(io.BytesIO(stored)).convert("RGB"), dtype=np.float32).transpose(2, 0, 1) / 255
    assert upstream_tensor(stored).mean(axis=(1, 2)) != pytest.approx(((full - IMAGENET_MEAN) / IMAGENET_STD).mean(axis=(1, 2)), abs=1e-4)
    # the run says which bytes it read
    assert "stored copy" in run.request_params["input_bytes"] and "not the release file" in run.request_params["input_bytes"]
