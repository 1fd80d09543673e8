"""The card written beside SFT data: what the pairs are, from which profile and prompt, how many per
level, which file is the evaluation side, and what was left out."""
from __future__ import annotations

import hashlib
import json

from scoring import engine

from .writers import EVALUATION, LLAMAFACTORY_NAMES, TRAIN

MARKER = "<!-- cprt-workbench sft export -->"
LISTED_IN_CARD = 50


def _yaml_header(summary: dict) -> list[str]:
    """For the hf format: `load_dataset(folder)` gives the training split only; the evaluation file is its own configuration."""
    files = summary["files"]
    if summary["format"] != "hf":
        return []
    lines = ["---", "pretty_name: CPRT judge fine-tuning pairs (CPRT Workbench SFT export)", "configs:"]
    if TRAIN in files:
        lines += ["- config_name: default", "  data_files:", "  - split: train", f"    path: {files[TRAIN]}"]
    if EVALUATION in files:
        lines += ["- config_name: evaluation", "  data_files:", f"  - split: {summary['evaluation_split']}", f"    path: {files[EVALUATION]}"]
    return lines + ["---"]


def prompt_digest(judge: dict) -> str:
    return hashlib.sha256(json.dumps(judge, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def sft_card(summary: dict, profile, judge: dict, tax) -> str:
    fmt, files = summary["format"], summary["files"]
    lines = _yaml_header(summary) + [MARKER, "", "# CPRT judge fine-tuning pairs", ""]
    if profile.provisional:
        lines += [
            "> **Warning: provisional boundaries.** The scoring profile is provisional: its level boundaries were not",
            "> fitted to published CPRT-Bench scores (or the fit did not reproduce them). Computed scores in these",
            "> answers will change when the profile is fitted; a judge trained on them learns the provisional scale.",
            "",
        ]
    lines += [
        "Instruction-response pairs for supervised fine-tuning of a privacy-severity judge (CPRT Section 5.4).",
        f"The instruction is the judge prompt `{summary['prompt_version']}` with the `{summary['strategy']}` strategy,",
        "exactly as a judge run sends it: the system text, then the user text followed by the image. The answer is",
        "the judge's own output format, `{\"reasoning\": ..., \"score\": ...}`, with the ground-truth score and a rationale",
        "built from the consensus attributes (which are present, at which levels, and the severity level that follows).",
        "",
        f"- Format: `{fmt}`",
        f"- Judge prompt: `{summary['prompt_version']}` / `{summary['strategy']}` (sha256 of the rendered texts: `{prompt_digest(judge)}`)",
        f"- Annotation-stage pairs: {'yes, annotate prompt `' + summary['annotate_prompt_version'] + '`' if summary['annotation_stages'] else 'no'}",
        f"- Taxonomy version: {tax.version}",
        f"- Training data: split `{summary['training_split']}` only.",
        f"- **Evaluation file (split `{summary['evaluation_split']}`, never train on it):** {_evaluation_file(fmt, files)}",
        "- No image id and no identical image bytes (sha256) are on both sides; the export refuses a selection that would leak.",
        "",
    ]
    if summary["include_images"]:
        lines += [
            "> **This export contains images.** They may show people, documents and other personal data: keep the",
            "> data private and share it only under the terms of the original image collection (VISPR).",
            "> Faces: " + (f"the face-anonymized variants under `{summary['faces']}` (images without one are left out and listed)"
                           if summary["faces"] != "original" else "the original images")
            + f" ({summary['images']['anonymized']} anonymized, {summary['images']['original']} original).",
            "",
        ]
    else:
        lines += [
            "**Images are not included.** Each pair refers to `images/<id>.jpg`: place the VISPR file of each id there",
            "(e.g. from VISPR's `test2017/<id>.jpg`) before training.",
            "",
        ]
    lines += ["## Scoring profile", "",
              f"- Profile: `{summary['profile_name']}` version {summary['profile_version']}{' (PROVISIONAL)' if summary['provisional'] else ''}",
              f"- Source: {profile.source}",
              f"- Weights: {list(profile.weights or engine.WEIGHTS)}",
              "", "| level | lo | hi |", "|---|---|---|"]
    bounds = profile.bounds
    lines += [f"| {lv} | {bounds.lo[lv - 1]:.6f} | {bounds.hi[lv - 1]:.6f} |" for lv in engine.LEVELS]
    lines += ["", "Rows imported from CPRT-Bench keep their published level and score; other images are scored with the profile above.",
              "", "## Counts", "", "| part | split | judge pairs at level 1 | level 2 | level 3 | level 4 | all pairs | left out |",
              "|---|---|---|---|---|---|---|---|"]
    for part, split in ((TRAIN, summary["training_split"]), (EVALUATION, summary["evaluation_split"])):
        lv = summary["levels"].get(part, {})
        lines.append(f"| {part} | {split} | {lv.get(1, 0)} | {lv.get(2, 0)} | {lv.get(3, 0)} | {lv.get(4, 0)} "
                     f"| {summary['pairs'].get(part, 0)} | {summary['excluded_count'].get(part, 0)} |")
    for split, s in summary["splits"].items():
        lines.append(f"\nSplit `{split}`: {s['rows']} images with ground truth ({s['published']} published, {s['computed']} computed); "
                     f"{s['skipped_no_score']} skipped without a score, {s['skipped_no_labels']} without labels.")
    excluded = [(part, row) for part in (TRAIN, EVALUATION) for row in summary["excluded"].get(part, [])]
    if excluded:
        lines += ["", "## Left out", "", "Pairs that could not be written, each with the reason (all of them in `excluded.jsonl`):", ""]
        lines += [f"- {part} `{row['id']}` ({row['task']}): {row['reason']}" for part, row in excluded[:LISTED_IN_CARD]]
        if len(excluded) > LISTED_IN_CARD:
            lines.append(f"- ... {sum(summary['excluded_count'].values()) - LISTED_IN_CARD} more in `excluded.jsonl`")
    lines += ["", "## Use", ""] + _usage(fmt)
    return "\n".join(lines) + "\n"


def _evaluation_file(fmt: str, files: dict) -> str:
    if EVALUATION not in files:
        return "none (the evaluation split has no image with ground truth)"
    if fmt == "hf":
        return f"`{files[EVALUATION]}`, configuration `evaluation` (`load_dataset(folder, \"evaluation\")`)"
    if fmt == "llamafactory":
        return f"`{files[EVALUATION]}`, registered as `{LLAMAFACTORY_NAMES[EVALUATION]}`"
    return f"`{files[EVALUATION]}`"


def _usage(fmt: str) -> list[str]:
    if fmt == "hf":
        return ["`datasets.load_dataset(folder, split=\"train\")` gives the `messages` (TRL's vision-language chat format) and",
                "`images` columns that TRL's `SFTTrainer` takes; see the project README for a training command."]
    if fmt == "llamafactory":
        return [f"Point LLaMA-Factory's `dataset_dir` at this folder and set `dataset: {LLAMAFACTORY_NAMES[TRAIN]}`",
                f"(and `eval_dataset: {LLAMAFACTORY_NAMES[EVALUATION]}` to evaluate); see the project README."]
    return ["Upload `train.jsonl` as the training file of an OpenAI fine-tuning job. `evaluation-test.jsonl` is the held-out",
            "test split: keep it for evaluation after training. OpenAI's documentation says its moderation skips training",
            "images that show people or faces, which are many of these images: check the job's report of skipped examples."]
