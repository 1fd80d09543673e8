"""onnxruntime sessions: CUDA when this process's onnxruntime has it, else the CPU; one per file and
process, shared by a chunk's threads (an InferenceSession's `run` is thread-safe)."""
from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np


def execution_providers() -> list[str]:
    import onnxruntime

    available = onnxruntime.get_available_providers()
    return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available] or ["CPUExecutionProvider"]


def open_session(source):
    """A session over a path or the model's bytes; raises whatever onnxruntime raises for a bad file."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: a CUDA provider missing its libraries falls back quietly
    return onnxruntime.InferenceSession(source, sess_options=options, providers=execution_providers())


_lock = threading.Lock()


@lru_cache(maxsize=4)
def _cached(path: str, sha256: str):
    return open_session(path)


def shared_session(path: str, sha256: str):
    """The process's session for this file (keyed by its digest too: a replaced file is a new session)."""
    with _lock:
        return _cached(path, sha256)


def softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stable for large logits (the row maximum is subtracted first)."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
