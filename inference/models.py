"""Model runs and their per-image results (filled in by the inference issue)."""
