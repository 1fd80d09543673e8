"""The dataset card (README.md) of an export: the Hub's YAML metadata and configs, the dataset
version, the profile, annotators, predictions.
"""
from __future__ import annotations

import json

from annotations import taxonomy
from annotations.datasets.models import DatasetVersion
from annotations.faces.detector import detector_name
from annotations.models import Annotator

from .. import engine
from ..models import ScoringProfile
from .common import CONFIGS, EXPORT_MARKER, public_annotator


FACE_METHOD_VERBS = {"blur": "blurred", "pixelate": "pixelated", "fill": "filled with black"}


# The Hub's metadata of an export that is not scoped to a dataset version (a version's recipe may
# replace any of them in its `hub` block; size_categories is always counted from the rows).
DEFAULT_HUB = {
    "pretty_name": "CPRT-Bench (CPRT Workbench export)",
    # `other` comes with license_name and license_link on the Hub [decision: VISPR's terms, which the
    # images and the labels derived from them follow; the link is its authors' repository].
    "license": "other",
    "license_name": "vispr-terms",
    "license_link": "https://github.com/tribhuvanesh/vpa",
    "task_categories": ["image-classification"],
    "language": ["en"],
    "tags": ["privacy", "vispr", "cprt-bench"],
}


def size_category(rows: int) -> str:
    """The Hub's size bucket of a dataset of `rows` rows."""
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < bound:
            return label
    return "1M<n<10M"


def hub_metadata(summary: dict, version: DatasetVersion | None = None) -> dict:
    """license (with license_name and license_link when it is `other`), task_categories, language, tags,
    size_categories, pretty_name of the card: the defaults, the version's name and its recipe's `hub`
    block when the export is scoped to one."""
    meta = {key: (list(value) if isinstance(value, list) else value) for key, value in DEFAULT_HUB.items()}
    if version is not None:
        meta["pretty_name"] = f"CPRT-Bench: {version.name}"
        meta["tags"] = [*meta["tags"], "cprt-dataset-version"]
        for key, value in (version.recipe.get("hub") or {}).items():
            if value not in (None, [], ""):
                meta[key] = value
    if meta["license"] != "other":  # the Hub pairs license_name / license_link with `other` only
        meta.pop("license_name", None)
        meta.pop("license_link", None)
    meta["size_categories"] = [size_category(sum(s["rows"] for s in summary["splits"].values()))]
    return meta


def _yaml(key: str, value) -> str:
    """One YAML line; strings and lists written as JSON, which YAML reads as flow scalars and sequences."""
    return f"{key}: {json.dumps(value, ensure_ascii=False)}"


def dataset_card(profile: ScoringProfile, tax: taxonomy.Taxonomy, summary: dict, include_annotations: bool, include_images: bool = False,
                 version: DatasetVersion | None = None) -> str:
    meta = hub_metadata(summary, version)
    keys = ("pretty_name", "license", "license_name", "license_link", "task_categories", "language", "tags", "size_categories")
    lines = ["---", *(_yaml(k, meta[k]) for k in keys if k in meta), "configs:"]
    for config, (_, files_key) in CONFIGS.items():
        files = summary.get(files_key) or {}
        if files:
            lines += [f"- config_name: {config}", "  data_files:"]
            for split, path in files.items():
                lines += [f"  - split: {split}", f"    path: {path}"]
    lines += ["---", EXPORT_MARKER, "", "# CPRT-Bench export", ""]
    if profile.provisional:
        lines += [
            "> **Warning: provisional boundaries.** The scoring profile used for computed rows is provisional:",
            "> its level boundaries were not fitted to published CPRT-Bench scores (or the fit did not reproduce them).",
            "> Computed scores will change when the profile is fitted.",
            "",
        ]
    lines += [
        "One row per image: `id` (the VISPR file id), `binary_labels` (`level1`..`level4`, each a mapping of that",
        "level's attribute keys to 0/1), `level` (1 = most severe; a `ClassLabel` whose values are the levels 1-4,",
        "index 0 unused) and `score` in [0, 1].",
        "",
    ]
    if version is not None:
        lines += _version_section(version)
    if include_images and summary.get("face_variant"):
        fv = summary["face_variant"]
        lines += [
            "> **This export contains images with faces removed.** The configuration `images` holds, for each exported",
            f"> row, its face-anonymized variant: every face found by {detector_name()} at threshold {fv['threshold']:g}",
            f"> was {FACE_METHOD_VERBS.get(fv['method'], fv['method'])} with a margin of {fv['margin']:g}"
            " of the box on each side (re-encoded, metadata removed). Rows whose image has no such variant have no image.",
            "> A detector misses some faces, and documents, tattoos and other personal data stay visible: keep the",
            "> dataset private and share it only under the terms of the original image collection (VISPR).",
        ]
    elif include_images:
        lines += [
            "> **This export contains images.** The configuration `images` holds the image bytes of the exported rows",
            "> (re-encoded, metadata removed). They may show people, documents and other personal data: keep the",
            "> dataset private and share it only under the terms of the original image collection (VISPR).",
        ]
    else:
        lines.append("**Images are not redistributed.** Ids resolve to VISPR files, e.g. `test2017/<id>.jpg`.")
    lines += [
        "",
        "## Scoring profile",
        "",
        f"- Profile: `{profile.name}` version {profile.version}{' (PROVISIONAL)' if profile.provisional else ''}",
        f"- Source: {profile.source}",
        f"- Weights: {list(profile.weights or engine.WEIGHTS)}",
        f"- Taxonomy version: {tax.version}",
    ]
    consensus = [
        public_annotator({"id": a.pk, "name": a.name, "kind": a.kind, "provider": a.provider, "model_name": a.model_name,
                          "prompt_version": a.prompt_version})
        for a in profile.consensus_annotators.all()
    ]
    lines.append(f"- Consensus annotators: {', '.join(a['name'] for a in consensus) if consensus else '(none)'}")
    lines.append(f"- Assisted labels: {profile.assisted_rule} (the `annotations` configuration marks each assisted row)")
    lines += ["", "| level | lo | hi |", "|---|---|---|"]
    bounds = profile.bounds
    for level in engine.LEVELS:
        lines.append(f"| {level} | {bounds.lo[level - 1]:.6f} | {bounds.hi[level - 1]:.6f} |")
    lines += [
        "",
        "Rows imported from CPRT-Bench keep their published `level` and `score` unchanged; other rows are computed",
        "with the profile above from the consensus of its annotators.",
        "",
        "## Counts",
        "",
        "| split | rows | published | computed | level 1 | level 2 | level 3 | level 4 | skipped (no score) | skipped (no labels) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for split, s in summary["splits"].items():
        lv = s["levels"]
        lines.append(
            f"| {split} | {s['rows']} | {s['published']} | {s['computed']} | {lv[1]} | {lv[2]} | {lv[3]} | {lv[4]} "
            f"| {s['skipped_no_score']} | {s['skipped_no_labels']} |"
        )
    empty = [split for split, s in summary["splits"].items() if s["rows"] == 0]
    if empty:
        lines += ["", f"Splits without rows are not part of the dataset: {', '.join(empty)}."]
    if include_annotations or include_images:
        columns = [("annotation_rows", "annotations"), ("prediction_rows", "predictions")] if include_annotations else []
        columns += [("image_rows", "images")] if include_images else []
        lines += ["", "| split | " + " | ".join(f"`{name}` rows" for _, name in columns) + " |", "|---|" + "---|" * len(columns)]
        for split, s in summary["splits"].items():
            lines.append(f"| {split} | " + " | ".join(str(s.get(key, 0)) for key, _ in columns) + " |")
    lines += _annotator_section(consensus, summary, include_annotations)
    if include_annotations:
        lines += [
            "",
            "## Configuration `annotations`",
            "",
            "One row per (image, annotator): the annotator (people under a pseudonym such as `human-7`), its kind,",
            "provider/model/prompt version for models, the raw labels (0, 0.5, 1; null where missing) and rationales.",
            "",
            "## Configuration `predictions`",
            "",
            "One row per (image, judge run): the run id, provider, model, prompt version, strategy, whether faces were",
            "assumed anonymised (`counterfactual_faces`), where its requests went (`endpoint`, the host only) and whether",
            "its replies came from a stand-in (`stand_in`: the project's fake provider, not research data), its",
            "`provenance` (`demo`: seeded by the demo, no model was called; `stand-in`; `real`), the outcome",
            "(`ok`, `unparseable`, `refused`, `error`) and the predicted score with its level under the profile above",
            "(null without a valid score).",
        ]
    if include_images:
        lines += [
            "",
            "## Configuration `images`",
            "",
            "One row per exported image that has stored bytes: `id` and `image` (an Image feature)."
            + (" The bytes are the face-anonymized variants (faces removed), not the originals." if summary.get("face_variant") else ""),
        ]
    return "\n".join(lines) + "\n"


def _annotator_section(consensus: list[dict], summary: dict, include_annotations: bool) -> list[str]:
    """Who labelled: people only as pseudonyms (`human-<n>`), models by provider, model and prompt version."""

    def describe(a: dict) -> str:
        if a["kind"] == Annotator.KIND_MODEL:
            return f"model {a['provider']} / {a['model_name']}, prompt {a['prompt_version']}"
        return {Annotator.KIND_HUMAN: "person (pseudonym)", Annotator.KIND_GROUND_TRUTH: "imported CPRT-Bench ground truth"}.get(a["kind"], a["kind"])

    lines = ["", "## Annotators", "", "Consensus set of the profile (its annotators' labels make the computed rows):", ""]
    lines += [f"- `{a['name']}`: {describe(a)}" for a in consensus] or ["- (none)"]
    if include_annotations:
        lines += ["", "Annotators in the configuration `annotations`:", "", "| annotator | kind | images |", "|---|---|---|"]
        for name, a in sorted(summary["annotators"].items()):
            lines.append(f"| `{name}` | {describe(a)} | {a['rows']} |")
        if not summary["annotators"]:
            lines.append("| (none) | | |")
        lines += [
            "",
            "Judge runs in the configuration `predictions`:",
            "",
            "| run | provider | model | prompt version | strategy | counterfactual faces | endpoint | predictions |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for run_id, r in sorted(summary["prediction_runs"].items(), key=lambda item: int(item[0])):
            lines.append(
                f"| {run_id} | {r['provider']} | {r['model_name']} | {r['prompt_version']} | {r['strategy']} "
                f"| {'yes' if r['counterfactual_faces'] else 'no'} "
                f"| {r.get('endpoint') or '—'}{_provenance_note(r)} | {r['rows']} |"
            )
        if not summary["prediction_runs"]:
            lines.append("| (none) | | | | | | | |")
    return lines


def _version_section(version: DatasetVersion) -> list[str]:
    """The dataset version the export is scoped to: how its images were chosen."""
    lines = [
        "## Dataset version",
        "",
        f"Only the images of the dataset version `{version.name}` (VISPR {', '.join(version.vispr_splits)}, seed {version.seed}),",
        "chosen from VISPR's attribute labels by the recipe below; its members never change.",
        "",
        "| rule | any of | none of | selected |",
        "|---|---|---|---|",
    ]
    for rule in version.recipe.get("rules", []):
        only = " (and nothing else)" if rule.get("only") else ""
        lines.append(f"| {rule['name']} | {', '.join(rule['any'])}{only} | {', '.join(rule['none']) or '—'} "
                     f"| {version.rule_counts.get(rule['name'], 0)} |")
    if version.overlaps:
        lines += ["", "Overlaps: " + "; ".join(f"{pair}: {n}" for pair, n in version.overlaps.items()) + "."]
    lines += ["", "Checksums (sha256):", ""] + [f"- {what}: `{digest}`" for what, digest in version.checksums.items()] + [""]
    return lines


def _provenance_note(run: dict) -> str:
    """What the card says beside a run that is not real research data."""
    if run.get("provenance") == "demo":
        return " (**demo**: seeded by the demo, no model was called)"
    return " (**stand-in**: the fake provider, not research data)" if run.get("stand_in") else ""
