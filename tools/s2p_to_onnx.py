#!/usr/bin/env python
"""Convert an upstream S2P checkpoint (.pth) into the ONNX file `manage.py register_classifier` takes.

Needs torch (not a dependency of the project: install it where you convert, e.g. a throwaway venv with
`pip install torch onnx onnxruntime numpy pillow`; torchvision is optional). Run from the repository root:

    python tools/s2p_to_onnx.py best_acc_s2p-0.pth s2p-ipd.onnx [--dataset IPD] [--verify photo.jpg ...]
    python manage.py register_classifier s2p-ipd s2p-ipd.onnx

What upstream is (graphnex/privacy-from-visual-entities, read at commit da56609):
- srcs/nets/s2p.py `SceneToPrivacyClassifier`: `self.backbone = models.resnet50(num_classes=365)`
  (`get_pre_trained_model`, torchvision's ResNet-50 with Places365's 365 scene logits) and
  `self.scene_to_privacy_layer = nn.Linear(365, n_out_classes)` (`scene_to_privacy_fc_layer`, use_bce
  false: 2 outputs); `forward(img)` returns `(privacy_logits, scene_logits)`.
- srcs/utils.py `save_model`: the file is `{"net": net.state_dict(), "measure", "epoch", "type"}`, so the
  weights are `checkpoint["net"]` with keys `backbone.*` and `scene_to_privacy_layer.{weight,bias}`.
- demo/demo_s2p.py `predict`: `F.softmax(outputs, dim=1)` over the privacy logits: the ONNX file ends
  with that softmax and gives probabilities (cprt.output = probabilities).
- Class order, srcs/datasets/imageprivacy.py `privacy_classes`: IPD `{0: "private", 1: "public"}`,
  PrivacyAlert `{0: "public", 1: "private"}`. The S2P-IPD-1.0.0 model card's model is trained on IPD,
  hence the default `--dataset IPD` (cprt.classes = private,public).
- Preprocessing, imageprivacy.py `set_img_transform(img_size=448)` / `load_image`: RGB, Resize((448, 448)),
  ToTensor, Normalize(ImageNet mean/std): inference/providers/onnx/preprocess.py does the same with
  Pillow and numpy (--verify compares it with torchvision's transform when torchvision is installed).

The file keeps that information in its metadata (cprt.classes, cprt.output, cprt.preprocessing,
cprt.source), so register_classifier needs no --classes. Every conversion is checked: onnxruntime and
torch must agree on a random batch (max abs difference <= 1e-4) and on every --verify image.
`--fake-checkpoint FILE` writes a checkpoint of upstream's layout with random weights (for testing this script).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASSES = {"IPD": ["private", "public"], "PrivacyAlert": ["public", "private"]}
N_SCENES, SIZE, TOLERANCE = 365, 448, 1e-4


def preprocess_module():
    """The workbench's preprocessing (inference/providers/onnx/preprocess.py: numpy + Pillow), loaded by
    path: importing the inference package would need Django and the project's settings."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cprt_preprocess", ROOT / "inference" / "providers" / "onnx" / "preprocess.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.S2P_PREPROCESSING, module.tensor


def resnet50(num_classes: int):
    """torchvision's ResNet-50 (v1.5: stride on the 3x3 conv) with the same module names, for when
    torchvision is not installed; the state dict keys are identical."""
    try:
        import torchvision

        return torchvision.models.resnet50(weights=None, num_classes=num_classes)
    except Exception:  # noqa: BLE001 - missing, or a build that does not match this torch
        pass
    import torch.nn as nn

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            return self.relu(self.bn3(self.conv3(out)) + identity)

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.layer1 = self._layer(64, 3)
            self.layer2 = self._layer(128, 4, stride=2)
            self.layer3 = self._layer(256, 6, stride=2)
            self.layer4 = self._layer(512, 3, stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(2048, num_classes)

        def _layer(self, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes * 4:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4))
            layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes * 4
            layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet50()


def s2p_module():
    """SceneToPrivacyClassifier's parameters under upstream's names, with the demo's softmax at the end."""
    import torch
    import torch.nn as nn

    class S2P(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = resnet50(N_SCENES)
            self.scene_to_privacy_layer = nn.Linear(N_SCENES, 2)

        def forward(self, img):
            return torch.softmax(self.scene_to_privacy_layer(self.backbone(img)), dim=1)

    return S2P()


def load_weights(path: Path, unsafe: bool) -> dict:
    import torch

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=not unsafe)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a file it will not unpickle safely
        sys.exit(f"{path}: cannot load it as weights only ({exc.__class__.__name__}: {str(exc)[:300]}). "
                 "If you trust the file, pass --unsafe-load (it unpickles arbitrary objects).")
    state = checkpoint.get("net", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        sys.exit(f"{path}: expected upstream's {{'net': state_dict, ...}} (srcs/utils.py save_model).")
    state = {k.replace("module.", "", 1) if k.startswith("module.") else k: v for k, v in state.items()}
    weight = state.get("scene_to_privacy_layer.weight")
    if weight is None:
        sys.exit(f"{path}: no scene_to_privacy_layer.weight: not an S2P checkpoint (s2pmlp and the graph models are not supported).")
    if tuple(weight.shape) != (2, N_SCENES):
        sys.exit(f"{path}: scene_to_privacy_layer is {tuple(weight.shape)}, not (2, 365): a use_bce (one-logit) S2P is not supported.")
    return state


def fake_checkpoint(path: Path) -> None:
    import torch

    torch.manual_seed(0)
    net = s2p_module()
    for module in net.modules():  # BN statistics that are not the identity, so that a wrong eval mode would show
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    torch.save({"net": net.state_dict(), "measure": 80.45, "epoch": 117, "type": "best"}, path)
    print(f"wrote {path}: a checkpoint of upstream's layout with random weights")


def upstream_tensor(image_path: Path):
    """Upstream's own transform when torchvision is there, else None."""
    try:
        import torchvision.transforms as T
    except Exception:  # noqa: BLE001 - missing, or a build that does not match this torch
        return None
    from PIL import Image

    transform = T.Compose([T.Resize((SIZE, SIZE)), T.ToTensor(), T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    return transform(Image.open(image_path).convert("RGB"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, nargs="?")
    parser.add_argument("output", type=Path, nargs="?")
    parser.add_argument("--dataset", choices=sorted(CLASSES), default="IPD", help="What the checkpoint was trained on (class order).")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--verify", type=Path, nargs="*", default=[], help="Images on which torch and onnxruntime must agree.")
    parser.add_argument("--unsafe-load", action="store_true", help="torch.load with weights_only=False (only for a file you trust).")
    parser.add_argument("--fake-checkpoint", type=Path, help="Write a random checkpoint of upstream's layout to this file and stop.")
    args = parser.parse_args(argv)
    import numpy as np
    import onnx
    import onnxruntime
    import torch

    if args.fake_checkpoint:
        fake_checkpoint(args.fake_checkpoint)
        return 0
    if not args.checkpoint or not args.output:
        parser.error("give CHECKPOINT and OUTPUT")
    net = s2p_module()
    net.load_state_dict(load_weights(args.checkpoint, args.unsafe_load), strict=True)
    net.eval()
    dummy = torch.zeros(1, 3, SIZE, SIZE)
    export = dict(input_names=["image"], output_names=["probabilities"], opset_version=args.opset,
                  dynamic_axes={"image": {0: "N"}, "probabilities": {0: "N"}})
    with torch.no_grad():
        try:
            torch.onnx.export(net, (dummy,), str(args.output), dynamo=False, **export)
        except TypeError:  # an older torch without the dynamo switch
            torch.onnx.export(net, (dummy,), str(args.output), **export)
    S2P_PREPROCESSING, tensor = preprocess_module()

    digest = hashlib.sha256(args.checkpoint.read_bytes()).hexdigest()
    model = onnx.load(str(args.output))
    del model.metadata_props[:]
    for key, value in {
        "cprt.classes": ",".join(CLASSES[args.dataset]),
        "cprt.output": "probabilities",
        "cprt.preprocessing": json.dumps(S2P_PREPROCESSING),
        "cprt.source": f"S2P checkpoint {args.checkpoint.name} (sha256 {digest}), trained on {args.dataset}; "
                       f"tools/s2p_to_onnx.py with torch {torch.__version__}, opset {args.opset}",
    }.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, str(args.output))

    session = onnxruntime.InferenceSession(str(args.output), providers=["CPUExecutionProvider"])
    batch = torch.randn(3, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    checks = [("random batch of 3", batch)]
    for image in args.verify:
        ours = torch.from_numpy(tensor(image.read_bytes(), S2P_PREPROCESSING))[None]
        theirs = upstream_tensor(image)
        if theirs is not None:
            gap = float((ours[0] - theirs).abs().max())
            print(f"{image.name}: preprocessing vs torchvision's transform: max abs difference {gap:.2e}")
            if gap > 1e-4:
                sys.exit(f"{image.name}: our preprocessing differs from upstream's by {gap:.2e}")
        checks.append((image.name, ours))
    worst = 0.0
    for name, x in checks:
        with torch.no_grad():
            expected = net(x).numpy()
        got = session.run(None, {"image": x.numpy()})[0]
        gap = float(np.abs(expected - got).max())
        worst = max(worst, gap)
        p_private = got[:, CLASSES[args.dataset].index("private")].round(4).tolist()
        print(f"{name}: torch vs onnxruntime max abs difference {gap:.2e}; P(private) {p_private}")
    if worst > TOLERANCE:
        sys.exit(f"onnxruntime and torch disagree by {worst:.2e} (> {TOLERANCE}); the file is not usable")
    print(f"wrote {args.output} ({args.output.stat().st_size / 1e6:.1f} MB): classes {','.join(CLASSES[args.dataset])}, "
          f"probabilities; register it with: python manage.py register_classifier NAME {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
