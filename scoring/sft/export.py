"""The SFT export: check the options, select the ground truth, refuse leaks, write pairs, card and
evaluation file into a folder. The `export_sft` command and the browser's export job both call
`export_sft`.

Only the chosen training split becomes training data; the test split is written separately as the
evaluation file, labelled as such. A selection in which an image (by id or by identical bytes) would
be on both sides is refused before anything is written. The export is built in a sibling folder and
swapped in at the end, so a failure leaves nothing (or a previous export) behind.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from annotations import taxonomy
from annotations.datasets.versions import dataset_image_ids
from annotations.models import Image
from core.audit import audit
from inference import prompts
from scoring import cprt_bench
from scoring.cprt_bench.common import swap_in
from scoring.models import ScoringProfile

from . import selection
from .card import MARKER, sft_card
from .hygiene import ImageRef, LeakError, check_disjoint
from .images import FACES_ORIGINAL, ImageReader, ImageUnavailable
from .pairs import JUDGE_STRATEGY, TASK_JUDGE, annotate_instructions, judge_instruction, pairs_for
from .writers import EVALUATION, FORMATS, TRAIN, WRITERS

TRAINING_SPLITS = tuple(s for s, _ in Image.SPLITS if s != Image.SPLIT_TEST)
EVALUATION_SPLIT = Image.SPLIT_TEST
MAX_LISTED = 200

__all__ = ["SFTError", "LeakError", "export_sft", "check_options", "FORMATS", "TRAINING_SPLITS"]


class SFTError(cprt_bench.ExportError):
    """An SFT export was refused before anything was written (an ExportError, so the job page shows it as it is)."""


def check_options(fmt: str, prompt_version: str | None, split: str, include_images: bool, faces: str) -> str:
    """Validate the options that need no database; returns the prompt version to use."""
    if fmt not in FORMATS:
        raise SFTError(f"Unknown format {fmt!r}: use {', '.join(FORMATS)}.")
    version = prompt_version or prompts.DEFAULT_VERSION["judge"]
    if version not in prompts.JUDGE_VERSIONS:
        raise SFTError(f"Unknown judge prompt version {version!r}: use {', '.join(prompts.JUDGE_VERSIONS)}.")
    if split == EVALUATION_SPLIT:
        raise SFTError(f"The {EVALUATION_SPLIT} split is the evaluation side and never training data: choose {' or '.join(TRAINING_SPLITS)}.")
    if split not in TRAINING_SPLITS:
        raise SFTError(f"Unknown training split {split!r}: use {' or '.join(TRAINING_SPLITS)}.")
    if faces != FACES_ORIGINAL and not include_images:
        raise SFTError("Face-anonymized images only make sense with the images included.")
    if WRITERS[fmt].needs_images and not include_images:
        raise SFTError(f"The {fmt} format embeds every image in the file (as a data URL): include the images to use it.")
    return version


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise SFTError(f"{out_dir} exists and is not a folder.")
        readme = out_dir / "README.md"
        previous = readme.is_file() and MARKER in readme.read_text(encoding="utf-8", errors="replace")
        if any(out_dir.iterdir()) and not previous:
            raise SFTError(f"{out_dir} is not empty and is not a previous SFT export: choose a new or empty folder.")


def export_sft(
    out_dir: Path | str,
    fmt: str,
    prompt_version: str | None = None,
    split: str = "train",
    profile: ScoringProfile | None = None,
    include_images: bool = False,
    annotation_stages: bool = False,
    faces: str = FACES_ORIGINAL,
    progress: Callable[[int, int], None] | None = None,
    actor=None,
    dataset_version=None,
) -> dict:
    """Write fine-tuning pairs in `fmt` into `out_dir`; return a summary (JSON-able). With
    `dataset_version` (a DatasetVersion), only its images make pairs, on both sides; the leak check
    still compares the training pairs with every image of the evaluation split."""
    out_dir = Path(out_dir).resolve()
    version = check_options(fmt, prompt_version, split, include_images, faces)
    profile = profile or ScoringProfile.active()
    _check_out_dir(out_dir)
    try:
        reader = ImageReader(faces) if include_images else None
    except ImageUnavailable as exc:
        raise SFTError(str(exc)) from None
    tax = taxonomy.active()
    judge = judge_instruction(version, tax)
    annotate = annotate_instructions(prompts.DEFAULT_VERSION["annotate"], tax) if annotation_stages else None

    train_ids, eval_ids = selection.split_image_ids(split), selection.split_image_ids(EVALUATION_SPLIT)
    if dataset_version is not None:
        members = set(dataset_image_ids(dataset_version))
        train_ids, eval_ids = [i for i in train_ids if i in members], [i for i in eval_ids if i in members]
    total = 2 * (len(train_ids) + len(eval_ids))
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    stats = {split: selection.empty_stats(), EVALUATION_SPLIT: selection.empty_stats()}
    items = {
        TRAIN: list(selection.ground_truth(train_ids, profile, tax, stats[split], advance)),
        EVALUATION: list(selection.ground_truth(eval_ids, profile, tax, stats[EVALUATION_SPLIT], advance)),
    }
    if not items[TRAIN]:
        scope = f" in dataset version {dataset_version.name}" if dataset_version is not None else ""
        raise SFTError(f"Nothing to export: no image of the {split} split{scope} has a ground-truth score under {profile.label}.")
    training_refs = [ImageRef(i.image_id, i.vispr_id, i.split, i.sha256) for i in items[TRAIN]]
    check_disjoint(training_refs, selection.image_refs(EVALUATION_SPLIT))

    summary = {
        "kind": "sft", "format": fmt, "prompt_version": version, "strategy": JUDGE_STRATEGY,
        "annotate_prompt_version": prompts.DEFAULT_VERSION["annotate"] if annotation_stages else "",
        "profile": profile.label, "profile_name": profile.name, "profile_version": profile.version, "provisional": profile.provisional,
        "dataset_version": dataset_version.name if dataset_version is not None else "",
        "training_split": split, "evaluation_split": EVALUATION_SPLIT, "include_images": include_images, "faces": faces,
        "annotation_stages": annotation_stages, "splits": stats, "files": {}, "pairs": {}, "levels": {}, "excluded": {},
        "excluded_count": {}, "images": {"original": 0, "anonymized": 0},
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-sft-", dir=out_dir.parent))
    try:
        writer = WRITERS[fmt](staging, include_images)
        for part in (TRAIN, EVALUATION):
            _write_part(writer, part, items[part], judge, annotate, tax, reader, summary)
            advance(len(train_ids if part == TRAIN else eval_ids))
        writer.finish()
        summary["files"] = dict(writer.files)
        summary["parts"] = [  # one row per part, as the job page shows them
            {"part": part, "split": source, "pairs": summary["pairs"][part], "levels": [summary["levels"][part][lv] for lv in (1, 2, 3, 4)],
             "excluded": summary["excluded_count"][part], "file": writer.files.get(part, "")}
            for part, source in ((TRAIN, split), (EVALUATION, EVALUATION_SPLIT))
        ]
        if not summary["pairs"][TRAIN]:
            raise SFTError(f"Nothing to export: every training pair was left out ({summary['excluded_count'][TRAIN]} listed).")
        excluded = [{"part": part, **row} for part, rows in writer.excluded.items() for row in rows]
        if excluded:
            with (staging / "excluded.jsonl").open("w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in excluded)
            summary["files"]["excluded"] = "excluded.jsonl"
        (staging / "README.md").write_text(sft_card(summary, profile, judge, tax), encoding="utf-8")
        swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary["out_dir"] = str(out_dir)
    audit(
        actor, "export_sft", profile, out_dir=str(out_dir), format=fmt, prompt_version=version, training_split=split,
        pairs=summary["pairs"], include_images=include_images, faces=faces, annotation_stages=annotation_stages,
    )
    return summary


def _write_part(writer, part: str, items, judge: dict, annotate: dict | None, tax, reader, summary: dict) -> None:
    writer.open(part)
    if reader is not None:
        reader.prepare(item.image_id for item in items)
    pairs = 0
    levels = {lv: 0 for lv in (1, 2, 3, 4)}
    for item in items:
        image = None
        if reader is not None:
            try:
                data, ext, variant = reader.read(item.image_id, item.file)
            except (ImageUnavailable, OSError) as exc:
                writer.exclude(part, pairs_for(item, judge, tax)[0], f"image unavailable: {exc}")
                continue
            image = (data, ext)
            summary["images"][variant] += 1
        for pair in pairs_for(item, judge, tax, annotate):
            if writer.add(part, pair, image if pair.with_image else None) is None:
                pairs += 1
                if pair.task == TASK_JUDGE:
                    levels[pair.level] += 1
    writer.close(part)
    summary["pairs"][part] = pairs
    summary["levels"][part] = levels
    summary["excluded_count"][part] = len(writer.excluded[part])
    summary["excluded"][part] = writer.excluded[part][:MAX_LISTED]
