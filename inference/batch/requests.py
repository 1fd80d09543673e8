"""Request files: one JSON line per (item, stage), custom_id = run/item/stage, split by the
provider's per-file limits. Lines are streamed to temporary files, so memory stays flat. The requests
are the run kind's (`inference.kinds`): exactly what the online run would send."""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from annotations.images import mime_type
from annotations.models import Image

from .. import kinds
from ..models import Run
from ..providers import ModelRequest
from . import conf
from .models import BatchRequest

# "item" since items became the run's units; "img" (older files, whose items were their images) is still read.
_CUSTOM_ID = re.compile(r"^run(\d{1,12})-(?:item|img)(\d{1,15})-([a-z][a-z0-9_]{0,7})\Z")  # a kind's stage


def custom_id(run_id: int, item_id: int, stage: str) -> str:
    return f"run{run_id}-item{item_id}-{stage}"


def parse_custom_id(value) -> tuple[int, int, str] | None:
    """(run id, item id, stage), or None when `value` is not one of ours."""
    match = _CUSTOM_ID.match(value) if isinstance(value, str) else None
    return (int(match.group(1)), int(match.group(2)), match.group(3)) if match else None


def first_stage(run: Run) -> str:
    return kinds.get(run.task).stages[0]


def previous_stage(run: Run, stage: str) -> str:
    """The stage whose answers `stage` follows from ("" for the first)."""
    stages = kinds.get(run.task).stages
    index = stages.index(stage)
    return stages[index - 1] if index else ""


def _read_image(file_name: str) -> tuple[bytes, str]:
    storage = Image._meta.get_field("file").storage
    with storage.open(file_name, "rb") as fh:
        data = fh.read()
    return data, mime_type(file_name)


def model_requests(run: Run, stage: str, item_ids: Iterable[int]) -> Iterator[tuple[int, int, ModelRequest]]:
    """(item id, primary image id, ModelRequest) for each item, exactly what the online run would send.
    A later stage follows from the answers the earlier stage's requests kept (`BatchRequest.reply`,
    the kind's carry)."""
    kind = kinds.bind(run)
    ids = sorted(item_ids)
    earlier = previous_stage(run, stage)
    if earlier:
        for i in range(0, len(ids), 500):
            kept = BatchRequest.objects.filter(run=run, stage=earlier, item_id__in=ids[i : i + 500]).order_by("item_id")
            for item_id, image_id, carry in kept.values_list("item_id", "image_id", "reply"):
                yield item_id, image_id, kind.request(stage, (), carry)
        return
    for i in range(0, len(ids), 500):
        # Items deleted since launch, or whose image bytes are gone, are not built: the online run skips them too.
        for item in kind.items(ids[i : i + 500]):
            yield item.item_id, item.image_id, kind.request(stage, tuple(_read_image(name) for name in item.files), None, item)


@dataclass
class Part:
    """One request file within the provider's limits."""

    path: str
    item_ids: list[int] = field(default_factory=list)
    image_ids: list[int] = field(default_factory=list)  # each item's primary image, in the same order
    bytes: int = 0


def write_parts(run: Run, stage: str, requests: Iterable[tuple[int, int, ModelRequest]], line_for, directory: str,
                max_requests: int | None = None, max_bytes: int | None = None) -> list[Part]:
    """Stream one JSONL line per request into files of at most `max_requests` lines and `max_bytes` bytes."""
    max_requests = max_requests or conf.max_requests(run.provider)
    max_bytes = max_bytes or conf.max_bytes(run.provider)
    parts: list[Part] = []
    fh = None
    try:
        for item_id, image_id, request in requests:
            data = (json.dumps(line_for(custom_id(run.pk, item_id, stage), request), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            if len(data) > max_bytes:
                raise ValueError(f"item {item_id} (image {image_id}): one request is {len(data)} bytes, over the per-file limit of {max_bytes}")
            current = parts[-1] if parts else None
            if current is None or len(current.item_ids) >= max_requests or current.bytes + len(data) > max_bytes:
                if fh is not None:
                    fh.close()
                fh = tempfile.NamedTemporaryFile("wb", dir=directory, suffix=".jsonl", delete=False)
                current = Part(path=fh.name)
                parts.append(current)
            fh.write(data)
            current.item_ids.append(item_id)
            current.image_ids.append(image_id)
            current.bytes += len(data)
    finally:
        if fh is not None:
            fh.close()
    return parts
