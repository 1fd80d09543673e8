"""Register a local classifier (an ONNX file) under a name that binary runs use as their model.

    manage.py register_classifier s2p-ipd s2p.onnx [--classes private,public] [--output probabilities|logits]

The file must take N x 3 x 448 x 448 float and give N x 2 (inference/providers/onnx/registry.py says
exactly what is accepted); it is loaded, a dummy batch is run through it, and only then is it copied
under CPRT_DATA_DIR/classifiers/ and listed (Runs > Local classifiers). Anything else is refused with a
message and nothing is stored. tools/s2p_to_onnx.py makes such a file from an upstream S2P checkpoint.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from inference.providers.onnx import registry


class Command(BaseCommand):
    help = "Register a local private/public classifier (ONNX, N x 3 x 448 x 448 -> N x 2) for binary runs."

    def add_arguments(self, parser):
        parser.add_argument("name", help="The model name binary runs give (launch_run --model NAME).")
        parser.add_argument("file", help="The .onnx file.")
        parser.add_argument("--classes", help="The output's column order, e.g. private,public (default: the file's cprt.classes metadata).")
        parser.add_argument("--output", choices=["probabilities", "logits"],
                            help="What the output holds (default: the file's cprt.output metadata, else probabilities).")
        parser.add_argument("--json", action="store_true", help="Print the registered model as JSON.")

    def handle(self, *args, name, file, classes=None, output=None, json=False, **options):
        try:
            parsed = registry.parse_classes(classes) if classes is not None else None
            model = registry.register(name, Path(file), parsed, output)
        except registry.RegistrationError as exc:
            raise CommandError(f"Not registered: {exc}") from None
        summary = {"name": model.name, "file": model.file, "sha256": model.sha256, "input_shape": model.input_shape,
                   "output": model.output_kind, "classes": model.classes, "preprocessing": model.preprocessing}
        if json:
            self.stdout.write(_dumps(summary))
        else:
            self.stdout.write(f"Registered {model.name}: {model.file} (sha256 {model.sha256[:12]}), input {model.input_shape}, "
                              f"output {model.output_kind}, classes {','.join(model.classes)}.")


def _dumps(value) -> str:
    return json.dumps(value, indent=2)
