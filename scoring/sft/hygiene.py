"""Split hygiene for fine-tuning data: nothing of the evaluation side may reach the training side.

Pure functions over plain tuples. An image counts as the same on both sides when it has the same
database id, the same VISPR id, or identical bytes (the sha256 of its stored, cleaned bytes): a
photo stored twice under two ids would otherwise let the model see a test image in training.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

MAX_LISTED = 50


@dataclass(frozen=True)
class ImageRef:
    image_id: int
    vispr_id: str
    split: str
    sha256: str = ""


class LeakError(ValueError):
    """The selection would put evaluation images (or their bytes) into training data; nothing was written."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        listed = problems[:MAX_LISTED]
        more = len(problems) - len(listed)
        text = (
            f"Refused: {len(problems)} image{'s' if len(problems) != 1 else ''} would appear on both the training and the "
            "evaluation side; nothing was written:\n" + "\n".join(f"  {p}" for p in listed)
        )
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(text)


def find_leaks(training: Sequence[ImageRef], evaluation: Sequence[ImageRef]) -> list[str]:
    """Every training image that shares an id, a VISPR id or its bytes with an evaluation image, described."""
    by_id = {ref.image_id: ref for ref in evaluation}
    by_vispr = {ref.vispr_id: ref for ref in evaluation}
    by_sha: dict[str, list[ImageRef]] = {}
    for ref in evaluation:
        if ref.sha256:
            by_sha.setdefault(ref.sha256, []).append(ref)
    problems = []
    for ref in training:
        if ref.image_id in by_id:
            problems.append(f"image #{ref.image_id} ({ref.vispr_id}) is selected for training ({ref.split}) and is in the evaluation split")
        elif ref.vispr_id in by_vispr:
            problems.append(f"id {ref.vispr_id} is in training ({ref.split}) and in evaluation ({by_vispr[ref.vispr_id].split})")
        elif ref.sha256 and ref.sha256 in by_sha:
            twins = ", ".join(f"{t.vispr_id} ({t.split})" for t in by_sha[ref.sha256])
            problems.append(f"{ref.vispr_id} ({ref.split}) has the same bytes as {twins} (sha256 {ref.sha256[:12]}...)")
    return problems


def check_disjoint(training: Sequence[ImageRef], evaluation: Sequence[ImageRef]) -> None:
    problems = find_leaks(training, evaluation)
    if problems:
        raise LeakError(problems)
