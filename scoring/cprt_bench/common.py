"""CPRT-Bench files: the constants and errors every step shares."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable, Iterator

from annotations.models import Annotator, Image

DEFAULT_PROFILE = "cprt-bench"
LEVEL_KEYS = ("level1", "level2", "level3", "level4")
FORMATS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
SPLITS = tuple(value for value, _ in Image.SPLITS)
CHUNK = 500
MAX_LISTED_PROBLEMS = 200
EXPORT_MARKER = "<!-- cprt-workbench export -->"


class BenchFileError(ValueError):
    """A file of CPRT-Bench rows was refused as a whole; `problems` says where and why."""

    def __init__(self, path: Path | str, problems: list[str]):
        self.path = str(path)
        self.problems = problems
        listed = problems[:MAX_LISTED_PROBLEMS]
        more = len(problems) - len(listed)
        text = f"{self.path}: refused, nothing was written ({len(problems)} problem{'s' if len(problems) != 1 else ''}):\n"
        text += "\n".join(f"  {p}" for p in listed)
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(text)


class ExportError(ValueError):
    """An export was refused before anything was written."""


# config name -> (folder, summary key listing its files per split)
CONFIGS = {
    "default": ("data", "files"),
    "annotations": ("annotations", "annotation_files"),
    "predictions": ("predictions", "prediction_files"),
    "images": ("images", "image_files"),
}


def chunked(items: Iterable, size: int = CHUNK) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def public_annotator_name(annotator: dict) -> str:
    # People are exported under a stable pseudonym: account names can be personal (or e-mail addresses).
    if annotator["kind"] == Annotator.KIND_HUMAN:
        return f"human-{annotator['id']}"
    return annotator["name"]


def public_annotator(annotator: dict) -> dict:
    """What an export may say about an annotator: a model's provider, model and prompt version; of a person, nothing."""
    human = annotator["kind"] == Annotator.KIND_HUMAN
    return {
        "name": public_annotator_name(annotator),
        "kind": annotator["kind"],
        "provider": "" if human else annotator["provider"],
        "model_name": "" if human else annotator["model_name"],
        "prompt_version": "" if human else annotator["prompt_version"],
    }


def swap_in(staging: Path, out_dir: Path) -> None:
    """Replace `out_dir` by the finished `staging` folder (the previous export is removed only after)."""
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}-previous")
        shutil.rmtree(old, ignore_errors=True)
        out_dir.rename(old)
        staging.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(out_dir)
    out_dir.chmod(0o755)  # mkdtemp made it private to us; an export folder is meant to be read
