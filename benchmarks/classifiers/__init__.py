"""Local classifiers (binary private/public, e.g. S2P as ONNX): a benchmark folder (docs/classifiers.md)."""
