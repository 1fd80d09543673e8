"""Batch runs: request files (custom_id = run/image/stage), per-file splitting, ingest of output
files through the online parsing code, and the lifecycle (submit, poll, cancel, retry)."""
