"""Request files: one JSON line per (image, stage), custom_id = run/image/stage, split by the
provider's per-file limits. Lines are streamed to temporary files, so memory stays flat."""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from annotations.models import Image

from ..models import Run
from ..providers import ModelRequest
from . import conf

_CUSTOM_ID = re.compile(r"^run(\d{1,12})-img(\d{1,12})-(judge|stage1|stage2)\Z")


def custom_id(run_id: int, image_id: int, stage: str) -> str:
    return f"run{run_id}-img{image_id}-{stage}"


def parse_custom_id(value) -> tuple[int, int, str] | None:
    """(run id, image id, stage), or None when `value` is not one of ours."""
    match = _CUSTOM_ID.match(value) if isinstance(value, str) else None
    return (int(match.group(1)), int(match.group(2)), match.group(3)) if match else None


def first_stage(run: Run) -> str:
    return "judge" if run.task == Run.TASK_JUDGE else "stage1"


def _read_image(file_name: str) -> tuple[bytes, str]:
    storage = Image._meta.get_field("file").storage
    with storage.open(file_name, "rb") as fh:
        data = fh.read()
    return data, "image/png" if file_name.lower().endswith(".png") else "image/jpeg"


def model_requests(run: Run, stage: str, image_ids: Iterable[int], stage1_replies: dict | None = None) -> Iterator[tuple[int, ModelRequest]]:
    """(image id, ModelRequest) for each image, exactly what the online run would send."""
    from ..outcomes import stage2_text
    from ..schemas import Stage1Answer

    prompt, schemas = run.prompt_text, run.prompt_text["schemas"]
    ids = sorted(image_ids)
    if stage == "stage2":
        from annotations import taxonomy

        keys = taxonomy.active().keys
        for image_id in ids:
            stage1 = Stage1Answer.model_validate(stage1_replies[image_id]["answers"], context={"keys": keys})
            p = prompt["stage2"]
            yield image_id, ModelRequest(p["system"], stage2_text(prompt, stage1), "stage2", schemas["stage2"])
        return
    p = prompt[stage]
    for i in range(0, len(ids), 500):
        files = dict(Image.objects.filter(pk__in=ids[i : i + 500]).exclude(file="").values_list("pk", "file"))
        for image_id in ids[i : i + 500]:
            if image_id not in files:
                continue  # deleted since launch, or its bytes are gone: the online run skips it too
            data, mime = _read_image(files[image_id])
            yield image_id, ModelRequest(p["system"], p["user"], stage, schemas[stage], data, mime)


@dataclass
class Part:
    """One request file within the provider's limits."""

    path: str
    image_ids: list[int] = field(default_factory=list)
    bytes: int = 0


def write_parts(run: Run, stage: str, requests: Iterable[tuple[int, ModelRequest]], line_for, directory: str,
                max_requests: int | None = None, max_bytes: int | None = None) -> list[Part]:
    """Stream one JSONL line per request into files of at most `max_requests` lines and `max_bytes` bytes."""
    max_requests = max_requests or conf.max_requests(run.provider)
    max_bytes = max_bytes or conf.max_bytes(run.provider)
    parts: list[Part] = []
    fh = None
    try:
        for image_id, request in requests:
            data = (json.dumps(line_for(custom_id(run.pk, image_id, stage), request), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            if len(data) > max_bytes:
                raise ValueError(f"image {image_id}: one request is {len(data)} bytes, over the per-file limit of {max_bytes}")
            current = parts[-1] if parts else None
            if current is None or len(current.image_ids) >= max_requests or current.bytes + len(data) > max_bytes:
                if fh is not None:
                    fh.close()
                fh = tempfile.NamedTemporaryFile("wb", dir=directory, suffix=".jsonl", delete=False)
                current = Part(path=fh.name)
                parts.append(current)
            fh.write(data)
            current.image_ids.append(image_id)
            current.bytes += len(data)
    finally:
        if fh is not None:
            fh.close()
    return parts
