"""Local classifiers (ONNX files registered with `manage.py register_classifier`) run with onnxruntime."""
from .provider import OnnxProvider

Provider = OnnxProvider
__all__ = ["OnnxProvider", "Provider"]
