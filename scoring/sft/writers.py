"""Writers of fine-tuning pairs, one per training tool, all with the same small interface.

`open(part)`, `add(pair, image)` (returns None, or the reason the pair was left out), `close(part)`
and `finish()`. A part is "train" (the training split) or "evaluation" (the test split), always in
separate, labelled files. Every writer keeps the order in which runs send a judge request: the
system text, then the user text followed by the image.

- `hf`: parquet files with the `datasets` features in their schema metadata: `messages` in the chat
  format TRL's SFT trainer takes for vision-language models (content parts `{"type": "text", "text"}`
  and `{"type": "image"}`) and an `images` column (a list of Image features).
- `llamafactory`: ShareGPT-style JSON lists (`messages` with role/content, `<image>` where the image
  goes, an `images` list of paths relative to the dataset folder) and the `dataset_info.json` that
  registers them (formatting "sharegpt", columns messages/images, role/content/user/assistant/system tags).
- `openai`: chat fine-tuning JSONL, images as base64 data URLs, within OpenAI's documented limits
  for vision fine-tuning; a pair that would break one is left out and listed, never dropped silently.
"""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image as PILImage

from .images import MIME
from .pairs import Pair

TRAIN, EVALUATION = "train", "evaluation"
IMAGE_TOKEN = "<image>"  # LLaMA-Factory's image placeholder
BATCH = 50  # parquet rows per write: bounds the image bytes held in memory

# OpenAI vision fine-tuning (platform docs, "Vision fine-tuning" > image data requirements): at most
# 50,000 examples with images per training file, 10 images per example, 10 MB per image, JPEG/PNG/WEBP,
# RGB or RGBA. A file uploaded through the Files API may be at most 512 MB.
OPENAI_MAX_IMAGE_EXAMPLES = 50_000
OPENAI_MAX_IMAGES_PER_EXAMPLE = 10
OPENAI_MAX_IMAGE_BYTES = 10 * 1024 * 1024
OPENAI_FORMATS = {"jpeg", "png", "webp"}
OPENAI_MODES = {"RGB", "RGBA"}
OPENAI_MAX_FILE_BYTES = 512 * 1024 * 1024


def vispr_image_path(vispr_id: str, ext: str = "jpg") -> str:
    """Where an image is expected beside the data: given with the export, or placed there from VISPR."""
    return f"images/{vispr_id}.{ext}"


class Writer:
    name = ""
    needs_images = False

    def __init__(self, root: Path, include_images: bool):
        self.root = root
        self.include_images = include_images
        self.files: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.excluded: dict[str, list[dict]] = {}

    def open(self, part: str) -> None:
        self.counts[part] = 0
        self.excluded[part] = []

    def add(self, part: str, pair: Pair, image: tuple[bytes, str] | None) -> str | None:
        raise NotImplementedError

    def close(self, part: str) -> None:
        pass

    def finish(self) -> None:
        pass

    def keep_if_written(self, part: str, path: str) -> None:
        """List a part's file when it holds pairs; an empty part leaves no file behind."""
        if self.counts[part]:
            self.files[part] = path
        else:
            (self.root / path).unlink(missing_ok=True)

    def exclude(self, part: str, pair: Pair, reason: str) -> str:
        self.excluded[part].append({"id": pair.id, "task": pair.task, "reason": reason})
        return reason


# --- hf ---------------------------------------------------------------------------------------

def hf_features():
    import datasets  # imported where used: `datasets` (and pandas) cost a second at start-up

    text_part = {"type": datasets.Value("string"), "text": datasets.Value("string")}
    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "task": datasets.Value("string"),
            "messages": [{"role": datasets.Value("string"), "content": [text_part]}],
            "images": [datasets.Image()],
        }
    )


def trl_messages(pair: Pair) -> list[dict]:
    user = [{"type": "text", "text": pair.user}]
    if pair.with_image:
        user.append({"type": "image", "text": None})
    return [
        {"role": "system", "content": [{"type": "text", "text": pair.system}]},
        {"role": "user", "content": user},
        {"role": "assistant", "content": [{"type": "text", "text": pair.response}]},
    ]


class HFWriter(Writer):
    name = "hf"
    PATHS = {TRAIN: "data/train.parquet", EVALUATION: "evaluation/test.parquet"}

    def __init__(self, root: Path, include_images: bool):
        super().__init__(root, include_images)
        self.schema = hf_features().arrow_schema
        self.writer = None
        self.rows: list[dict] = []

    def open(self, part: str) -> None:
        super().open(part)
        target = self.root / self.PATHS[part]
        target.parent.mkdir(parents=True, exist_ok=True)
        self.writer = pq.ParquetWriter(target, self.schema)

    def add(self, part: str, pair: Pair, image: tuple[bytes, str] | None) -> str | None:
        images = []
        if pair.with_image:
            if image is not None:
                data, ext = image
                images.append({"bytes": data, "path": f"{pair.id}.{ext}"})
            else:  # resolved from the path when the VISPR file is placed there
                images.append({"bytes": None, "path": vispr_image_path(pair.id)})
        self.rows.append({"id": pair.id, "task": pair.task, "messages": trl_messages(pair), "images": images})
        self.counts[part] += 1
        if len(self.rows) >= BATCH:
            self._flush()
        return None

    def _flush(self) -> None:
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def close(self, part: str) -> None:
        self._flush()
        self.writer.close()
        self.writer = None
        self.keep_if_written(part, self.PATHS[part])


# --- llamafactory -----------------------------------------------------------------------------

LLAMAFACTORY_NAMES = {TRAIN: "cprt_judge_train", EVALUATION: "cprt_judge_evaluation_test"}


def llamafactory_entry(file_name: str) -> dict:
    return {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "messages", "images": "images"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant", "system_tag": "system"},
    }


class LlamaFactoryWriter(Writer):
    name = "llamafactory"

    def __init__(self, root: Path, include_images: bool):
        super().__init__(root, include_images)
        self.fh = None
        self.first = True
        self.written_images: set[str] = set()

    def open(self, part: str) -> None:
        super().open(part)
        self.fh = (self.root / f"{LLAMAFACTORY_NAMES[part]}.json").open("w", encoding="utf-8")
        self.fh.write("[\n")
        self.first = True

    def add(self, part: str, pair: Pair, image: tuple[bytes, str] | None) -> str | None:
        if IMAGE_TOKEN in pair.user or IMAGE_TOKEN in pair.system:
            return self.exclude(part, pair, f"the prompt text contains {IMAGE_TOKEN}, LLaMA-Factory's image placeholder")
        user = pair.user
        images = []
        if pair.with_image:
            user += IMAGE_TOKEN  # after the text: where runs put the image
            path = vispr_image_path(pair.id, image[1] if image is not None else "jpg")
            if image is not None and path not in self.written_images:
                target = self.root / path
                target.parent.mkdir(exist_ok=True)
                target.write_bytes(image[0])
                self.written_images.add(path)
            images.append(path)
        row = {
            "id": pair.id,
            "task": pair.task,
            "messages": [
                {"role": "system", "content": pair.system},
                {"role": "user", "content": user},
                {"role": "assistant", "content": pair.response},
            ],
            "images": images,
        }
        self.fh.write(("" if self.first else ",\n") + json.dumps(row, ensure_ascii=False))
        self.first = False
        self.counts[part] += 1
        return None

    def close(self, part: str) -> None:
        self.fh.write("\n]\n")
        self.fh.close()
        self.keep_if_written(part, f"{LLAMAFACTORY_NAMES[part]}.json")

    def finish(self) -> None:
        info = {LLAMAFACTORY_NAMES[part]: llamafactory_entry(path) for part, path in self.files.items()}
        (self.root / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


# --- openai -----------------------------------------------------------------------------------

OPENAI_PATHS = {TRAIN: "train.jsonl", EVALUATION: "evaluation-test.jsonl"}


def openai_image_problem(data: bytes, ext: str) -> str | None:
    """Why OpenAI would refuse this image in a training file, or None."""
    if len(data) > OPENAI_MAX_IMAGE_BYTES:
        return f"the image is {len(data):,} bytes; OpenAI accepts at most 10 MB ({OPENAI_MAX_IMAGE_BYTES:,} bytes) per image"
    try:
        with PILImage.open(io.BytesIO(data)) as img:
            fmt, mode = (img.format or "").lower(), img.mode
    except Exception as exc:  # noqa: BLE001 - unreadable bytes are a reason like any other
        return f"the image cannot be read ({exc.__class__.__name__})"
    if fmt not in OPENAI_FORMATS:
        return f"the image is {fmt or 'of unknown format'}; OpenAI accepts JPEG, PNG or WEBP"
    if mode not in OPENAI_MODES:
        return f"the image mode is {mode}; OpenAI accepts RGB or RGBA"
    return None


def data_url(data: bytes, ext: str) -> str:
    return f"data:{MIME.get(ext, 'image/jpeg')};base64,{base64.b64encode(data).decode('ascii')}"


class OpenAIWriter(Writer):
    name = "openai"
    needs_images = True

    def open(self, part: str) -> None:
        super().open(part)
        self.fh = (self.root / OPENAI_PATHS[part]).open("wb")
        self.size = 0
        self.image_examples = 0

    def add(self, part: str, pair: Pair, image: tuple[bytes, str] | None) -> str | None:
        user: str | list = pair.user
        if pair.with_image:
            if image is None:
                return self.exclude(part, pair, "no image bytes to embed")
            problem = openai_image_problem(*image)
            if problem:
                return self.exclude(part, pair, problem)
            if self.image_examples >= OPENAI_MAX_IMAGE_EXAMPLES:
                return self.exclude(part, pair, f"the file already holds {OPENAI_MAX_IMAGE_EXAMPLES} examples with images, OpenAI's limit")
            user = [{"type": "text", "text": pair.user}, {"type": "image_url", "image_url": {"url": data_url(*image)}}]
        line = {"messages": [
            {"role": "system", "content": pair.system},
            {"role": "user", "content": user},
            {"role": "assistant", "content": pair.response},
        ]}
        raw = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        if self.size + len(raw) > OPENAI_MAX_FILE_BYTES:
            return self.exclude(part, pair, "the file would pass 512 MB, the largest file OpenAI's Files API accepts")
        self.fh.write(raw)
        self.size += len(raw)
        self.image_examples += int(pair.with_image)
        self.counts[part] += 1
        return None

    def close(self, part: str) -> None:
        self.fh.close()
        self.keep_if_written(part, OPENAI_PATHS[part])


WRITERS = {w.name: w for w in (HFWriter, LlamaFactoryWriter, OpenAIWriter)}
FORMATS = tuple(WRITERS)
