"""Binary private/public: one image per item, P(private) from a local classifier (the onnx provider)."""
from .kind import BinaryKind  # noqa: F401
