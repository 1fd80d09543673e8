"""Benchmark: a local classifier on the CPU at 448 px: model images/s beside image decoding + preprocessing.

Run with `.venv/bin/python bench/classifier_speed.py [--images 32] [--batches 1,8,32] [--threads 0]`.
No weights are reachable here, so the model is built in this script with the onnx helper API: a
ResNet-50 (the S2P backbone: 7x7 stem, bottleneck stages of 3/4/6/3 blocks, 64->2048 channels, batch
norm folded into the convolutions as inference graphs have it) with random weights, its 365-way scene
layer, S2P's 365->2 layer and a softmax: 24.2 million parameters (the model card: 24,256,649, with batch norm), the same operations and shapes as
the converted S2P, so the timing is the real model's. Decoding + preprocessing is timed on JPEG photos
of 1024 x 768 (what a VISPR image is like) through the provider's own code (inference/providers/onnx/
preprocess.py), one thread. The model's time excludes preprocessing; "end to end, one thread" adds them.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402,F401 - SIGTERM ends the benchmark cleanly


def _preprocess_module():
    """The provider's preprocessing (numpy + Pillow), loaded by path: importing the inference package needs Django."""
    import importlib.util

    source = Path(__file__).resolve().parent.parent / "inference" / "providers" / "onnx" / "preprocess.py"
    spec = importlib.util.spec_from_file_location("cprt_preprocess", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_pre = _preprocess_module()
S2P_PREPROCESSING, tensor = _pre.S2P_PREPROCESSING, _pre.tensor


def resnet50_s2p(path: Path, seed: int = 0) -> int:
    """Write the graph; returns its parameter count."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def param(name, shape, scale):
        array = (rng.standard_normal(shape) * scale).astype(np.float32)
        inits.append(numpy_helper.from_array(array, name))
        count[0] += array.size
        return name

    def conv(x, cin, cout, k, stride=1, relu=True, name=""):
        w = param(f"{name}_w", (cout, cin, k, k), np.sqrt(2.0 / (cin * k * k)))
        b = param(f"{name}_b", (cout,), 0.01)  # batch norm folded into the convolution's bias
        y = f"{name}_y"
        nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
        if relu:
            nodes.append(helper.make_node("Relu", [y], [f"{name}_r"]))
            return f"{name}_r"
        return y

    x = conv("image", 3, 64, 7, 2, name="stem")
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "pool", 64
    for stage, (planes, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=1):
        for block in range(blocks):
            s = stride if block == 0 else 1
            name = f"l{stage}b{block}"
            y = conv(x, cin, planes, 1, name=f"{name}c1")
            y = conv(y, planes, planes, 3, s, name=f"{name}c2")
            y = conv(y, planes, planes * 4, 1, relu=False, name=f"{name}c3")
            shortcut = conv(x, cin, planes * 4, 1, s, relu=False, name=f"{name}down") if block == 0 else x
            nodes.append(helper.make_node("Add", [y, shortcut], [f"{name}_sum"]))
            nodes.append(helper.make_node("Relu", [f"{name}_sum"], [f"{name}_out"]))
            x, cin = f"{name}_out", planes * 4
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["feat"], axis=1))
    nodes.append(helper.make_node("Gemm", ["feat", param("fc_w", (2048, 365), 0.02), param("fc_b", (365,), 0.01)], ["scenes"]))
    nodes.append(helper.make_node("Gemm", ["scenes", param("s2p_w", (365, 2), 0.05), param("s2p_b", (2,), 0.0)], ["logits"]))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1))
    graph = helper.make_graph(nodes, "resnet50_s2p_random",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 448, 448])],
                              [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="cprt-bench")
    model.ir_version = 8
    onnx.save(model, str(path))
    return count[0]


def photos(n: int) -> list[bytes]:
    """1024 x 768 JPEGs with photo-like content (smooth gradients + noise), quality 90."""
    from PIL import Image

    rng = np.random.default_rng(1)
    out = []
    yy, xx = np.mgrid[0:768, 0:1024]
    for i in range(n):
        base = np.stack([(xx * (i + 1)) % 256, (yy * 2 + i * 30) % 256, ((xx + yy) // 3 + i * 50) % 256], axis=-1)
        noisy = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(noisy).save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=32, help="Images timed at each batch size (and decoded).")
    parser.add_argument("--batches", default="1,8,32", help="Batch sizes to time.")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: its default, all cores).")
    args = parser.parse_args()
    import onnxruntime

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resnet50_s2p.onnx"
        started = time.perf_counter()
        params = resnet50_s2p(path)
        print(f"model: ResNet-50 + 365 scenes + S2P 365->2 + softmax, random weights, {params / 1e6:.1f} M parameters, "
              f"{path.stat().st_size / 1e6:.0f} MB, built in {time.perf_counter() - started:.1f} s")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = args.threads
        session = onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    print(f"onnxruntime {onnxruntime.__version__}, CPUExecutionProvider, {os.cpu_count()} CPUs visible, "
          f"intra-op threads {args.threads or 'default'}")

    jpegs = photos(min(args.images, 16))
    started = time.perf_counter()
    rows = [tensor(jpegs[i % len(jpegs)], S2P_PREPROCESSING) for i in range(args.images)]
    prep_s = (time.perf_counter() - started) / args.images
    print(f"decode + preprocess (1024x768 JPEG -> 3x448x448 float, one thread): {prep_s * 1000:.1f} ms/image, {1 / prep_s:.1f} images/s")

    for size in [int(b) for b in args.batches.split(",")]:
        batch = np.stack([rows[i % len(rows)] for i in range(size)])
        session.run(None, {"image": batch})  # warm-up
        runs = max(1, args.images // size)
        started = time.perf_counter()
        for _ in range(runs):
            session.run(None, {"image": batch})
        model_s = (time.perf_counter() - started) / (runs * size)
        print(f"model, batch {size:>2}: {model_s * 1000:.1f} ms/image, {1 / model_s:.2f} images/s "
              f"(end to end with one decoding thread: {1 / (model_s + prep_s):.2f} images/s)")


if __name__ == "__main__":
    main()
