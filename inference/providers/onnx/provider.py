"""The `onnx` provider: a registered local classifier (inference/providers/onnx/models.py) run with
onnxruntime in the worker, on CUDA when this process's onnxruntime has it, else on the CPU.

It answers the one call every kind makes, `ask(system, user, images, schema)`, for the kinds that name
it in `Kind.providers` only (today the local-classifier benchmark's, benchmarks/classifiers/): the texts
are ignored, the one image is decoded and preprocessed as the model's stored preprocessing says, and
the answer is {"p_private": P(private), "probabilities": {class: p}} as JSON.
Concurrent calls from a chunk's threads are batched (batcher.py). Nothing is billed (cost 0), there
is no rate limit (ONNX_MAX_RPM is unset) and no retry is ever worth it: a bad image is a permanent
error of that image; a missing or changed model file fails the run.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np

from ..base import Availability, FatalProviderError, ModelRequest, PermanentError, Provider, ProviderReply, ProviderUnavailable
from .batcher import Batcher
from .models import ClassifierModel
from .preprocess import INPUT_BYTES, tensor
from .registry import sha256_of
from .session import execution_providers, shared_session, softmax

MAX_BATCH = 32  # images per model call at most (the run's concurrency caps it lower)

_batchers: dict[tuple[str, str], Batcher] = {}
_batchers_lock = threading.Lock()
_verified: set[tuple[str, str]] = set()


def _available_runtime() -> str:
    try:
        import onnxruntime
    except ImportError as exc:
        return f"onnxruntime is not installed: {exc}"
    return "" if onnxruntime else "onnxruntime is missing"


class OnnxProvider(Provider):
    name = "onnx"
    label = "Local classifier (ONNX)"
    queue = "default"  # [decision] CPU work: any worker; a GPU worker runs it on CUDA when onnxruntime-gpu is installed
    exclusive = True  # only the kinds that name it (a local classifier's kind): the launch form refuses the others

    def __init__(self, model_name: str):
        super().__init__(model_name)
        # Main thread (get_provider in the chunk and at launch): the row is read here, never in a worker thread.
        self.model = ClassifierModel.objects.filter(name=model_name).first()
        if self.model is None:
            raise ProviderUnavailable(f"No local classifier named {model_name!r} is registered (manage.py register_classifier).")

    @classmethod
    def suggested_model(cls) -> str:
        """The first registered classifier (by name): the launch form's default model for this provider."""
        return ClassifierModel.objects.order_by("name").values_list("name", flat=True).first() or ""

    @classmethod
    def availability(cls) -> Availability:
        problem = _available_runtime()
        count = ClassifierModel.objects.count()
        shown = {"classifiers": count, "execution": ",".join(execution_providers()) if not problem else "-"}
        if problem:
            return Availability(False, problem, shown)
        if not count:
            return Availability(False, "no classifier is registered: manage.py register_classifier NAME FILE.onnx", shown)
        return Availability(True, "", shown)

    def request_params(self) -> dict:
        """Recorded on the run: which file, classes and preprocessing answered it."""
        m = self.model
        return {"classifier": m.name, "sha256": m.sha256, "classes": m.classes, "output": m.output_kind,
                "input_shape": m.input_shape, "preprocessing": m.preprocessing, "input_bytes": INPUT_BYTES}

    def _batcher(self) -> Batcher:
        m = self.model
        key = (str(m.path), m.sha256)
        with _batchers_lock:
            if key not in _verified:
                if not Path(m.path).is_file():
                    raise FatalProviderError(f"The classifier file {m.file} is missing under CPRT_DATA_DIR.", reason="model_file")
                if sha256_of(Path(m.path)) != m.sha256:
                    raise FatalProviderError(f"The classifier file {m.file} changed since it was registered (sha256 differs).", reason="model_file")
                _verified.add(key)
            batcher = _batchers.get(key)
            if batcher is None:
                session = shared_session(*key)
                input_name, output_name = m.input_name, m.output_name

                def run_batch(rows: np.ndarray) -> np.ndarray:
                    return np.asarray(session.run([output_name], {input_name: rows})[0])

                fixed = m.batch_size
                batcher = _batchers[key] = Batcher(run_batch, fixed or MAX_BATCH, fixed=fixed is not None)
            return batcher

    def generate(self, request: ModelRequest) -> ProviderReply:
        if len(request.images) != 1:
            raise PermanentError(f"A local classifier takes one image per request, not {len(request.images)}.")
        started = time.monotonic()
        batcher = self._batcher()  # first: a missing or changed model file fails the run before any image is judged
        try:
            row = tensor(request.images[0][0], self.model.preprocessing)
        except ValueError as exc:  # this image cannot be read: this item's failure, never the run's
            raise PermanentError(str(exc), item_specific=True) from None
        out, batch_size = batcher.infer(row)
        out = np.asarray(out, dtype=np.float64)[None, :]
        probs = softmax(out)[0] if self.model.output_kind == ClassifierModel.OUTPUT_LOGITS else out[0]
        by_class = {c: float(p) for c, p in zip(self.model.classes, probs)}
        answer = {"p_private": min(1.0, max(0.0, by_class["private"])), "probabilities": by_class}
        raw = {"model": self.model.name, "sha256": self.model.sha256, "output": out[0].tolist(),
               "output_kind": self.model.output_kind, "batch_size": batch_size}
        return ProviderReply(text=json.dumps(answer), raw=raw, latency_ms=int((time.monotonic() - started) * 1000))
