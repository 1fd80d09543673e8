"""CPRT annotate: two stages per image (is each of the 22 attributes inferable, with reasoning; then the
model's own answers mapped to 0 / 0.5 / 1, text only); the labels are stored as the model's annotator."""
from .kind import AnnotateKind  # noqa: F401
