"""Small ONNX classifiers of S2P's interface (and broken ones), built with the onnx helper API.

No weights are reachable here, so the tests make their own models: `tiny_classifier` takes
N x 3 x 448 x 448 float and gives N x 2 (probabilities through a Softmax, or raw logits). Its
logits are a linear function of the image's mean red, green and blue (GlobalAveragePool -> Gemm),
so a test can compute the expected P(private) of any image by hand (`expected_p_private`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from inference.providers.onnx.preprocess import S2P_PREPROCESSING, tensor

# logits = mean_rgb_normalised @ W + B; column 0 is "private" when classes are private,public.
W = np.array([[2.0, -2.0], [0.0, 0.0], [-1.0, 1.0]], dtype=np.float32)
B = np.array([0.1, -0.1], dtype=np.float32)


def tiny_classifier(path: Path, *, softmax: bool = True, batch="N", chw=(3, 448, 448), out_classes: int = 2,
                    input_type=TensorProto.FLOAT, metadata: dict | None = None, two_outputs: bool = False) -> Path:
    weight = W if (chw[0], out_classes) == W.shape else np.resize(W, (chw[0], out_classes)).astype(np.float32)
    bias = B if out_classes == 2 else np.zeros(out_classes, dtype=np.float32)
    nodes = []
    source = "image"
    if input_type != TensorProto.FLOAT:
        nodes.append(helper.make_node("Cast", ["image"], ["image_f"], to=TensorProto.FLOAT))
        source = "image_f"
    nodes += [
        helper.make_node("GlobalAveragePool", [source], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["features"], axis=1),
        helper.make_node("Gemm", ["features", "W", "B"], ["logits"]),
    ]
    output = "logits"
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], axis=1))
        output = "probs"
    outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, [batch, out_classes])]
    if two_outputs:
        outputs.append(helper.make_tensor_value_info("features", TensorProto.FLOAT, [batch, chw[0]]))
    graph = helper.make_graph(
        nodes, "tiny_s2p",
        [helper.make_tensor_value_info("image", input_type, [batch, *chw])],
        outputs,
        initializer=[numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="cprt-tests")
    model.ir_version = 8
    for key, value in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def expected_p_private(image_bytes: bytes, private_column: int = 0) -> float:
    """P(private) of `tiny_classifier` on this image, computed without onnxruntime."""
    x = tensor(image_bytes, S2P_PREPROCESSING).astype(np.float64)
    logits = x.mean(axis=(1, 2)) @ W.astype(np.float64) + B
    e = np.exp(logits - logits.max())
    return float((e / e.sum())[private_column])
