"""The project's own prompt texts, versioned. A run stores the exact rendered texts it sent.

Judge prompts ask for a privacy-severity score in [0, 1] under one strategy (zero_shot, intuition,
taxonomy), optionally with the counterfactual-faces instruction. They never contain the CPRT scoring
function, its weights or the level boundaries. Annotate prompts are two-stage: stage 1 answers the
22 taxonomy questions (is the attribute *inferable*, with brief reasoning); stage 2 maps the model's
own stage-1 answers to 0 / 0.5 / 1 without seeing the image again.

Never edit a published version's text: add a new version and make it the default instead, so that
old runs stay traceable to what they sent.
"""
from __future__ import annotations

import json

from annotations import taxonomy as taxonomy_module

from .schemas import INFERABLE_CHOICES  # noqa: F401 - every stage-1 answer any version accepts

STRATEGIES = ("zero_shot", "intuition", "taxonomy")
JUDGE_VERSIONS = ("judge-v1", "judge-v2")
ANNOTATE_VERSIONS = ("annotate-v1", "annotate-v2")
DEFAULT_VERSION = {"judge": JUDGE_VERSIONS[-1], "annotate": ANNOTATE_VERSIONS[-1]}
STAGE1_CHOICES = {"annotate-v1": ("yes", "uncertain", "no"), "annotate-v2": ("yes", "no")}
# Older versions stay selectable (results stay comparable) and are labelled as older wherever offered.
OLDER = {
    "judge-v1": "older: its taxonomy text states how levels and counts combine into the score",
    "annotate-v1": "older: stage 1 offers \"uncertain\" instead of the paper's binary decision",
}


def version_label(version: str) -> str:
    return f"{version} ({OLDER[version]})" if version in OLDER else f"{version} (current)"

_JUDGE_SYSTEM_V1 = (
    "You are an expert in visual privacy. You assess how much privacy risk an image would carry "
    "if it were shared publicly. You describe risk; you never identify people or guess their "
    "personal details."
)

_JUDGE_TASK_V1 = (
    "Rate the privacy severity of the attached image on a scale from 0 to 1, where 0 means the "
    "image reveals nothing private about anyone and 1 means it reveals the most severe kind of "
    "private information."
)

_INTUITION_V1 = (
    "Think about privacy risk in two ways. Atomic sensitivity: some details are sensitive on their "
    "own, because they single out a person or expose something intimate. Compositional risk: "
    "details that are harmless one by one can combine into something identifying or sensitive, "
    "especially for someone who also has auxiliary information from elsewhere (a place, a habit, "
    "a face in the background, a piece of a name). Weigh both: an image can be risky because of one "
    "detail, or because of how several details add up."
)

_COUNTERFACTUAL_FACES_V1 = (
    "Counterfactual condition: assume that every face visible in this image has been perfectly "
    "anonymized, so that no face can be used to recognise or identify anyone. Do not use faces for "
    "identity inference; judge the privacy risk of everything else the image shows."
)

_JUDGE_OUTPUT_V1 = (
    "Answer with a JSON object with exactly two fields: \"reasoning\" (at most three sentences on "
    "what drives the risk) and \"score\" (a number from 0 to 1)."
)

_STAGE1_SYSTEM_V1 = (
    "You are annotating images for a visual privacy study. For each question you decide whether "
    "the attribute could be inferred from the image by a person looking at it. You do not infer the "
    "attribute itself: never name, identify or describe the person's actual details."
)

_STAGE1_TASK_V1 = (
    "For each attribute below, answer whether it is inferable from the attached image: \"yes\" if "
    "it is clearly visible or clearly inferable, \"uncertain\" if it is only partly visible or the "
    "inference is doubtful, \"no\" otherwise. Give one short sentence of reasoning for each."
)

_STAGE1_OUTPUT_V1 = (
    "Answer with a JSON object {\"answers\": {...}} holding one entry per attribute key, each "
    "{\"inferable\": \"yes\" | \"uncertain\" | \"no\", \"reasoning\": \"...\"}. Use every key "
    "exactly once and no other keys."
)

_STAGE2_SYSTEM_V1 = (
    "You convert your own earlier privacy annotations into numeric labels. You only use what the "
    "earlier answers say; you do not see the image again."
)

_STAGE2_TASK_V1 = (
    "Below are your answers about one image, one per attribute. Map each to a label by the strength "
    "of inferability you expressed: 1 if the attribute is clearly present or clearly inferable, 0.5 "
    "if it is ambiguous (partly visible, uncertain inference), 0 if it is not inferable. Answer with "
    "a JSON object {\"labels\": {\"<attribute key>\": 0 | 0.5 | 1, ...}} using every key exactly once."
)

# annotate-v2: the paper's stage 1 is a binary decision with reasoning; stage 2 reads the strength of
# inferability from that reasoning.
_STAGE1_TASK_V2 = (
    "For each attribute below, decide whether it is inferable from the attached image: answer \"yes\" "
    "or \"no\", and give brief reasoning for your decision that says what in the image supports it "
    "and how clearly."
)

_STAGE1_OUTPUT_V2 = (
    "Answer with a JSON object {\"answers\": {...}} holding one entry per attribute key, each "
    "{\"inferable\": \"yes\" | \"no\", \"reasoning\": \"...\"}. Use every key exactly once and no other keys."
)

_STAGE2_TASK_V2 = (
    "Below are your answers about one image, one per attribute: a yes/no decision with your reasoning. "
    "Map each to a label by the strength of inferability your reasoning expressed: 1 if the attribute "
    "is clearly present or clearly inferable, 0.5 if your reasoning expressed ambiguity (partly visible, "
    "uncertain inference), 0 if it is not inferable. Answer with a JSON object "
    "{\"labels\": {\"<attribute key>\": 0 | 0.5 | 1, ...}} using every key exactly once."
)

STAGE2_ANSWERS_MARKER = "Your earlier answers (JSON):"


def _taxonomy_block(tax, version: str = "judge-v2") -> str:
    """The four levels, their attributes and what makes each level. judge-v1 (older) also stated the
    score's arithmetic, which the paper withheld from the models; judge-v2 does not."""
    lines = [
        "The Compositional Privacy Risk Taxonomy groups private information into four levels, from "
        "level 1 (most severe) to level 4 (least severe):"
    ]
    source_levels = {lv["level"]: lv for lv in taxonomy_module.read_file()["levels"]}
    for level in (1, 2, 3, 4):
        info = source_levels.get(level, {})
        name = tax.level_names.get(level, info.get("name", f"Level {level}"))
        lines.append(f"Level {level} — {name}: {info.get('description', '').strip()}")
        for attr in tax.attributes:
            if attr.level == level:
                lines.append(f"  - {attr.key}: {attr.question}")
    if version == "judge-v1":
        lines.append(
            "Information of a more severe level weighs more than any amount of less severe information; "
            "within a level, more kinds of information mean more risk."
        )
    return "\n".join(lines)


def _questions_block(tax) -> str:
    return "\n".join(f"- {a.key}: {a.question}" for a in tax.attributes)


def judge_prompt(version: str, strategy: str, counterfactual_faces: bool, tax=None) -> dict:
    """{"system", "user"} for a judge run."""
    if version not in JUDGE_VERSIONS:
        raise ValueError(f"Unknown judge prompt version {version!r}; known: {', '.join(JUDGE_VERSIONS)}.")
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}.")
    tax = tax or taxonomy_module.active()
    parts = [_JUDGE_TASK_V1]
    if strategy == "intuition":
        parts.append(_INTUITION_V1)
    elif strategy == "taxonomy":
        parts.append(_taxonomy_block(tax, version))
    if counterfactual_faces:
        parts.append(_COUNTERFACTUAL_FACES_V1)
    parts.append(_JUDGE_OUTPUT_V1)
    return {"system": _JUDGE_SYSTEM_V1, "user": "\n\n".join(parts)}


def annotate_prompts(version: str, tax=None) -> dict:
    """{"stage1": {"system", "user"}, "stage2": {"system", "user"}}; stage 2's user text is a template
    whose `{answers}` is replaced by the model's own stage-1 JSON."""
    if version not in ANNOTATE_VERSIONS:
        raise ValueError(f"Unknown annotate prompt version {version!r}; known: {', '.join(ANNOTATE_VERSIONS)}.")
    tax = tax or taxonomy_module.active()
    v2 = version == "annotate-v2"
    task1, output1, task2 = (_STAGE1_TASK_V2, _STAGE1_OUTPUT_V2, _STAGE2_TASK_V2) if v2 else (_STAGE1_TASK_V1, _STAGE1_OUTPUT_V1, _STAGE2_TASK_V1)
    stage1_user = "\n\n".join([task1, "Attributes (key: question):\n" + _questions_block(tax), output1])
    stage2_user = "\n\n".join([task2, "Attribute keys: " + ", ".join(tax.keys), STAGE2_ANSWERS_MARKER + "\n{answers}"])
    return {
        "stage1": {"system": _STAGE1_SYSTEM_V1, "user": stage1_user},
        "stage2": {"system": _STAGE2_SYSTEM_V1, "user": stage2_user},
    }


def stage2_user_text(template: str, stage1_answers: dict) -> str:
    # str.replace, not str.format: the template contains literal JSON braces.
    return template.replace("{answers}", json.dumps(stage1_answers, ensure_ascii=False, sort_keys=True, indent=1))
