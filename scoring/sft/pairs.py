"""Instruction-response pairs for fine-tuning a judge: plain data in, plain data out (no ORM).

The instruction is the taxonomy-guided judge prompt of a stated version, rendered by
`inference.prompts` exactly as a judge run sends it (system text; user text, then the image). The
response is what the judge schema (`inference.schemas.JudgeAnswer`) accepts: `{"reasoning", "score"}`,
carrying the ground-truth score and a rationale built deterministically from the consensus
attributes. The rationale names the present attributes by level and says which severity level
follows; it never mentions weights or boundaries (the judge prompts never show the scoring function,
so neither do the answers it is trained on).

Optional pairs for the two annotation stages use the annotate prompts the same way: stage 1 answers
"yes"/"no" per attribute from the consensus labels, stage 2 maps those answers back to 1/0.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from inference import kinds, prompts

JUDGE_STRATEGY = "taxonomy"  # the paper's deployable judge follows the taxonomy-guided prompt
TASK_JUDGE, TASK_STAGE1, TASK_STAGE2 = "judge", "stage1", "stage2"


@dataclass(frozen=True)
class GroundTruth:
    """One image's ground truth under a profile, and where its bytes are."""

    image_id: int
    vispr_id: str
    split: str
    labels: Mapping[str, int]  # attribute key -> consensus 0/1
    level: int
    score: float
    sha256: str = ""
    file: str = ""  # stored file name; "" when the image has no bytes here


@dataclass(frozen=True)
class Pair:
    """One training example: a system text, a user text, whether the image follows the user text, the answer."""

    id: str
    task: str
    system: str
    user: str
    with_image: bool
    response: str
    level: int = 0
    score: float = 0.0
    meta: dict = field(default_factory=dict)


def judge_instruction(version: str, tax=None) -> dict:
    """{"system", "user"}: the taxonomy-guided judge prompt of `version`, as a run renders it."""
    return kinds.render("judge", version, JUDGE_STRATEGY, False, tax)["judge"]


def annotate_instructions(version: str, tax=None) -> dict:
    rendered = kinds.render("annotate", version, "", False, tax)
    return {"stage1": rendered["stage1"], "stage2": rendered["stage2"]}


def present_by_level(labels: Mapping[str, int], tax) -> dict[int, list[str]]:
    present: dict[int, list[str]] = {}
    for attribute in tax.attributes:
        if labels.get(attribute.key) == 1:
            present.setdefault(attribute.level, []).append(attribute.key)
    return present


def rationale(labels: Mapping[str, int], level: int, tax) -> str:
    """At most three sentences (the judge prompt's limit): what is present, by level, and the level that follows."""
    present = present_by_level(labels, tax)
    if not present:
        first = "No attribute of the privacy taxonomy is visible or inferable in the image."
        most_severe = None
    else:
        groups = "; ".join(f"level {lv} ({tax.level_names.get(lv, f'Level {lv}')}): {', '.join(keys)}" for lv, keys in sorted(present.items()))
        first = f"Visible or inferable: {groups}."
        most_severe = min(present)
    if most_severe is None:
        second = f"With nothing private shown, the image is at severity level {level} of 4."
    elif most_severe == level:
        total = len(tax.keys_of_level(level))
        second = (
            f"The most severe information present is of level {level}, with {len(present[level])} of that level's {total} "
            f"kinds, so the image is at severity level {level} of 4."
        )
    else:  # an imported row whose published level is not the most severe level present: the data wins
        second = f"The most severe information present is of level {most_severe}; the ground truth places the image at severity level {level} of 4."
    return f"{first} {second}"


def judge_response(item: GroundTruth, tax) -> str:
    """The judge's own output format, with the ground-truth score (JSON keeps the float exactly)."""
    return json.dumps({"reasoning": rationale(item.labels, item.level, tax), "score": float(item.score)}, ensure_ascii=False)


def stage1_answers(labels: Mapping[str, int], tax) -> dict:
    answers = {}
    for attribute in tax.attributes:
        if labels.get(attribute.key) == 1:
            answers[attribute.key] = {"inferable": "yes", "reasoning": f"The consensus of the annotators finds {attribute.key} clearly inferable."}
        else:
            answers[attribute.key] = {"inferable": "no",
                                      "reasoning": f"The consensus of the annotators does not find {attribute.key} clearly inferable."}
    return answers


def judge_pair(item: GroundTruth, instruction: dict, tax) -> Pair:
    return Pair(
        id=item.vispr_id, task=TASK_JUDGE, system=instruction["system"], user=instruction["user"], with_image=True,
        response=judge_response(item, tax), level=item.level, score=item.score,
    )


def stage_pairs(item: GroundTruth, instructions: dict, tax) -> list[Pair]:
    """Stage 1 (image + 22 questions -> yes/no with reasoning) and stage 2 (own answers -> 1/0), as runs send them."""
    answers = stage1_answers(item.labels, tax)
    stage1 = instructions["stage1"]
    stage2 = instructions["stage2"]
    labels = {key: int(item.labels.get(key) == 1) for key in tax.keys}
    return [
        Pair(id=item.vispr_id, task=TASK_STAGE1, system=stage1["system"], user=stage1["user"], with_image=True,
             response=json.dumps({"answers": answers}, ensure_ascii=False), level=item.level, score=item.score),
        Pair(id=item.vispr_id, task=TASK_STAGE2, system=stage2["system"], user=prompts.stage2_user_text(stage2["user"], answers),
             with_image=False, response=json.dumps({"labels": labels}, ensure_ascii=False), level=item.level, score=item.score),
    ]


def pairs_for(item: GroundTruth, judge: dict, tax, annotate: dict | None = None) -> list[Pair]:
    pairs = [judge_pair(item, judge, tax)]
    if annotate is not None:
        pairs += stage_pairs(item, annotate, tax)
    return pairs
