"""Which images become fine-tuning pairs, with which ground truth: the database side of the SFT export.

Ground truth is what the dataset export writes (one rule for both): an image imported from CPRT-Bench
keeps its published level and score with its imported binary labels; any other image takes its
stored score under the chosen profile (the consensus of that profile's annotators). Images with
neither are skipped and counted.
"""
from __future__ import annotations

from typing import Callable, Iterator

from annotations import taxonomy
from annotations.models import Annotator, Image
from scoring import engine
from scoring.cprt_bench.export import _export_rows
from scoring.models import ScoringProfile

from .hygiene import ImageRef
from .pairs import GroundTruth

CHUNK = 500


def empty_stats() -> dict:
    return {"rows": 0, "published": 0, "computed": 0, "skipped_no_score": 0, "skipped_no_labels": 0, "levels": {lv: 0 for lv in engine.LEVELS}}


def split_image_ids(split: str) -> list[int]:
    return list(Image.objects.filter(split=split).order_by("vispr_id").values_list("id", flat=True))


def image_refs(split: str) -> list[ImageRef]:
    """Every image of a split, as the hygiene check compares them (all of them, scored or not)."""
    return [
        ImageRef(image_id=pk, vispr_id=vid, split=s, sha256=sha or "")
        for pk, vid, s, sha in Image.objects.filter(split=split).order_by("vispr_id").values_list("id", "vispr_id", "split", "sha256")
    ]


def ground_truth(
    image_ids: list[int], profile: ScoringProfile, tax: taxonomy.Taxonomy, stats: dict, advance: Callable[[int], None] | None = None
) -> Iterator[GroundTruth]:
    """GroundTruth for each image that has one, chunk by chunk, in VISPR id order; `stats` counts as the dataset export does."""
    key_of = {pk: key for key, pk in taxonomy.attribute_ids().items()}
    preferred = set(profile.consensus_annotators.filter(kind=Annotator.KIND_GROUND_TRUTH).values_list("id", flat=True))
    for start in range(0, len(image_ids), CHUNK):
        chunk = image_ids[start:start + CHUNK]
        rows = _export_rows(chunk, profile, tax, key_of, preferred, stats, set())
        info = {
            vid: (pk, split, sha or "", file or "")
            for pk, vid, split, sha, file in Image.objects.filter(id__in=chunk).values_list("id", "vispr_id", "split", "sha256", "file")
        }
        for row in rows:
            pk, split, sha, file = info[row["id"]]
            flat = {key: value for group in row["binary_labels"].values() for key, value in group.items()}
            yield GroundTruth(
                image_id=pk, vispr_id=row["id"], split=split, labels=flat, level=row["level"], score=row["score"], sha256=sha, file=file
            )
        if advance:
            advance(len(chunk))
