"""CPRT judge: one request per image, a privacy-severity score in [0, 1] with brief reasoning."""
from .kind import JudgeKind  # noqa: F401
