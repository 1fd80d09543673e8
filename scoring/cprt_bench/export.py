"""The export writer: a Hugging Face datasets folder (parquet per configuration + the dataset card).
"""
from __future__ import annotations

import json
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from annotations import taxonomy
from annotations.datasets.models import DatasetVersion
from annotations.datasets.versions import dataset_image_ids
from annotations.faces.variants import variant_files
from annotations.models import Annotator, Image, Label, Labeling
from core.audit import audit
from inference.models import Run, RunResult

from .. import engine
from ..models import ImageScore, ScoringProfile
from .card import dataset_card
from .common import CHUNK, CONFIGS, EXPORT_MARKER, SPLITS, ExportError, chunked, public_annotator, swap_in


# Export (Hugging Face datasets layout: a folder of parquet files per configuration + a dataset card)
#
# Configurations: `default` (the CPRT-Bench rows, always, in data/), `annotations` (every annotator's
# raw labels and rationales) and `predictions` (every judge run's results), both only with
# include_annotations, and `images` (the stored, metadata-free bytes of the exported rows' images)
# only with include_images. People never appear by account name (see public_annotator_name), and
# nothing read from settings is written: an export holds rows, the card and image bytes only.

IMAGE_CHUNK = 50  # images per parquet write: bounds the memory held by image bytes
# `datasets` reads a parquet file's features from this schema metadata key; it is how the `image`
# column loads as an Image feature (decoded to PIL) instead of a plain struct of bytes and path.
HF_FEATURES_KEY = b"huggingface"
def level_names(tax: taxonomy.Taxonomy) -> list[str]:
    """The `level` ClassLabel's names. Index 0 is unused so that the stored values stay the published
    levels 1-4 (a ClassLabel's values are 0..n-1): `ds.features["level"].int2str(1)` names level 1."""
    return ["0: (unused)"] + [f"{level}: {tax.level_names.get(level, f'level {level}')}" for level in engine.LEVELS]


def bench_features(tax: taxonomy.Taxonomy):
    import datasets  # heavy (pandas, pyarrow's dataset layer): imported where used, not at start-up

    labels = {f"level{level}": {key: datasets.Value("int64") for key in tax.keys_of_level(level)} for level in engine.LEVELS}
    return datasets.Features({
        "id": datasets.Value("string"), "binary_labels": labels,
        "level": datasets.ClassLabel(names=level_names(tax)), "score": datasets.Value("float64"),
    })


def bench_schema(tax: taxonomy.Taxonomy) -> pa.Schema:
    """The `default` configuration's parquet schema, with the `datasets` features in its metadata
    (`level` loads as a ClassLabel; its stored values are the levels 1-4, int64 as before)."""
    return bench_features(tax).arrow_schema


def annotations_schema(tax: taxonomy.Taxonomy) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("annotator", pa.string()),
            ("annotator_kind", pa.string()),
            ("provider", pa.string()),
            ("model_name", pa.string()),
            ("prompt_version", pa.string()),
            ("labels", pa.struct([(key, pa.float64()) for key in tax.keys])),
            ("rationales", pa.struct([(key, pa.string()) for key in tax.keys])),
            # Assisted labels (docs/scoring.md): a person's row made with model suggestions in view, which models, and
            # per attribute whether the answer equals the suggestion shown (null: no suggestion, or not a person's row).
            ("assisted", pa.bool_()),
            ("suggestions_seen", pa.list_(pa.string())),
            ("answers_as_suggested", pa.struct([(key, pa.bool_()) for key in tax.keys])),
        ]
    )


def predictions_schema() -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("run_id", pa.int64()),
            ("provider", pa.string()),
            ("model_name", pa.string()),
            ("prompt_version", pa.string()),
            ("strategy", pa.string()),
            ("counterfactual_faces", pa.bool_()),
            ("endpoint", pa.string()),
            ("stand_in", pa.bool_()),
            ("provenance", pa.string()),
            ("outcome", pa.string()),
            ("predicted_score", pa.float64()),
            ("predicted_level", pa.int64()),
        ]
    )


def images_schema() -> pa.Schema:
    features = {"id": {"dtype": "string", "_type": "Value"}, "image": {"_type": "Image"}}
    schema = pa.schema([("id", pa.string()), ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())]))])
    return schema.with_metadata({HF_FEATURES_KEY: json.dumps({"info": {"features": features}}).encode()})


def nest(flat: dict[str, int], tax: taxonomy.Taxonomy) -> dict:
    return {f"level{level}": {key: int(flat[key]) for key in tax.keys_of_level(level)} for level in engine.LEVELS}


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise ExportError(f"{out_dir} exists and is not a folder.")
        readme = out_dir / "README.md"
        previous_export = readme.is_file() and EXPORT_MARKER in readme.read_text(encoding="utf-8", errors="replace")
        if any(out_dir.iterdir()) and not previous_export:
            raise ExportError(f"{out_dir} is not empty and is not a previous export: choose a new or empty folder.")


def _check_splits(splits: Sequence[str]) -> list[str]:
    splits = list(dict.fromkeys(splits))
    if not splits:
        raise ExportError("Name at least one split.")
    for split in splits:
        if split not in SPLITS:
            raise ExportError(f"Unknown split {split!r}: use {', '.join(SPLITS)}.")
    return splits


def _ground_truth_labels(image_ids: list[int], key_of: dict[int, str], preferred: set[int], n_keys: int) -> dict[int, dict[str, int]]:
    """image id -> binary labels of the imported ground truth.

    An image imported under several names has several ground-truth annotators; the profile's own
    consensus annotator wins, otherwise the most recently written complete set.
    """
    per_pair: dict[tuple[int, int], dict[str, float]] = {}
    latest: dict[tuple[int, int], datetime] = {}
    for image_id, annotator_id, attribute_id, value, updated_at in Label.objects.filter(
        image_id__in=image_ids, annotator__kind=Annotator.KIND_GROUND_TRUTH
    ).values_list("image_id", "annotator_id", "attribute_id", "value", "updated_at"):
        key = key_of.get(attribute_id)
        if key is None:
            continue
        pair = (image_id, annotator_id)
        per_pair.setdefault(pair, {})[key] = value
        latest[pair] = max(latest.get(pair, updated_at), updated_at)
    chosen: dict[int, tuple[tuple[bool, datetime], dict[str, float]]] = {}
    for (image_id, annotator_id), values in per_pair.items():
        if len(values) != n_keys:
            continue
        rank = (annotator_id in preferred, latest[(image_id, annotator_id)])
        if image_id not in chosen or rank > chosen[image_id][0]:
            chosen[image_id] = (rank, values)
    return {image_id: {k: engine.binarise(v) for k, v in values.items()} for image_id, (_, values) in chosen.items()}


def export_dataset(
    out_dir: Path | str,
    splits: Sequence[str] = ("train", "test"),
    profile: ScoringProfile | None = None,
    include_annotations: bool = False,
    progress: Callable[[int, int], None] | None = None,
    actor=None,
    *,
    include_images: bool = False,
    face_variant: dict | None = None,
    dataset_version: DatasetVersion | None = None,
) -> dict:
    """Write the CPRT-Bench layout (parquet per configuration and split + dataset card) into `out_dir`; return a summary.

    Rows imported from CPRT-Bench keep their published level and score; other images take their
    ImageScore under `profile` (default: the active one); images with neither are skipped and
    counted. `include_annotations` adds the `annotations` and `predictions` configurations,
    `include_images` the `images` configuration (with `face_variant`, a face-anonymization setting, the
    anonymized variants instead of the originals; images without one are left out). With `dataset_version`, only
    that version's images are exported and the card carries its Hub metadata. The export is built in a sibling folder and swapped
    in at the end, so a failure leaves a previous export untouched. `progress(done, total)` is called
    after every chunk of images of every pass.
    """
    out_dir = Path(out_dir).resolve()
    splits = _check_splits(splits)
    profile = profile or ScoringProfile.active()
    _check_out_dir(out_dir)
    tax = taxonomy.active()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-export-", dir=out_dir.parent))
    try:
        summary = _write_export(staging, splits, profile, tax, include_annotations, include_images, progress, face_variant or {},
                                dataset_version)
        swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary["out_dir"] = str(out_dir)
    audit(
        actor,
        "export_hf",
        profile,
        out_dir=str(out_dir),
        splits={s: summary["splits"][s]["rows"] for s in splits},
        include_annotations=include_annotations,
        include_images=include_images,
        face_variant=face_variant or {},
        dataset_version=dataset_version.name if dataset_version else "",
    )
    return summary


def _write_parquet(target: Path, schema, ids: list[int], make_rows, advance, size: int = CHUNK) -> int:
    """Stream the rows made for `ids`, chunk by chunk, into one parquet file (none when no row); returns the row count."""
    writer = None
    written = 0
    try:
        for chunk in chunked(ids, size):
            rows = make_rows(chunk)
            if rows:
                if writer is None:
                    target.parent.mkdir(exist_ok=True)
                    writer = pq.ParquetWriter(target, schema)
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                written += len(rows)
            advance(len(chunk))
    finally:
        if writer is not None:
            writer.close()
    return written


def _write_config(root: Path, summary: dict, config: str, split: str, schema, ids, make_rows, advance, size: int = CHUNK) -> int:
    """One configuration's parquet file of one split; listed in the summary when it has rows."""
    folder, files_key = CONFIGS[config]
    path = f"{folder}/{split}.parquet"
    count = _write_parquet(root / path, schema, ids, make_rows, advance, size)
    if count:
        summary[files_key][split] = path
    return count


def _write_export(root: Path, splits, profile, tax, include_annotations, include_images, progress, face_variant: dict,
                  dataset_version: DatasetVersion | None = None) -> dict:
    attr_ids = taxonomy.attribute_ids()
    key_of = {pk: key for key, pk in attr_ids.items()}
    preferred = set(profile.consensus_annotators.filter(kind=Annotator.KIND_GROUND_TRUTH).values_list("id", flat=True))
    members = set(dataset_image_ids(dataset_version)) if dataset_version is not None else None
    ids_by_split = {
        s: [i for i in Image.objects.filter(split=s).order_by("vispr_id").values_list("id", flat=True) if members is None or i in members]
        for s in splits
    }
    passes = 1 + (2 if include_annotations else 0) + (1 if include_images else 0)
    total = sum(len(ids) for ids in ids_by_split.values()) * passes
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    summary: dict = {
        "profile": profile.label,
        "include_annotations": include_annotations,
        "include_images": include_images,
        "face_variant": dict(face_variant) if include_images else {},
        "dataset_version": dataset_version.name if dataset_version is not None else "",
        "splits": {},
        "annotators": {},  # public name -> kind, provider, model, prompt version, rows (annotations config)
        "prediction_runs": {},  # run id -> provider, model, prompt version, strategy, rows (predictions config)
        **{files_key: {} for _, files_key in CONFIGS.values()},
    }
    exported: dict[str, set[int]] = {}  # split -> ids of the images that have a row in `default`
    for split in splits:
        stats = {"rows": 0, "published": 0, "computed": 0, "skipped_no_score": 0, "skipped_no_labels": 0, "levels": {lv: 0 for lv in engine.LEVELS}}
        exported[split] = set()
        make_rows = lambda chunk, stats=stats, seen=exported[split]: _export_rows(chunk, profile, tax, key_of, preferred, stats, seen)  # noqa: E731
        _write_config(root, summary, "default", split, bench_schema(tax), ids_by_split[split], make_rows, advance)
        summary["splits"][split] = stats
    if not summary["files"]:
        scope = f" in dataset version {dataset_version.name}" if dataset_version is not None else ""
        raise ExportError(f"Nothing to export: no image of {', '.join(splits)}{scope} has a published or computed score under {profile.label}.")
    if include_annotations:
        annotators = {a["id"]: a for a in Annotator.objects.values("id", "name", "kind", "provider", "model_name", "prompt_version")}
        for split in splits:
            make_rows = lambda chunk: _annotation_rows(chunk, tax, key_of, annotators, summary["annotators"])  # noqa: E731
            count = _write_config(root, summary, "annotations", split, annotations_schema(tax), ids_by_split[split], make_rows, advance)
            summary["splits"][split]["annotation_rows"] = count
        for split in splits:
            make_rows = lambda chunk: _prediction_rows(chunk, profile.bounds, summary["prediction_runs"])  # noqa: E731
            count = _write_config(root, summary, "predictions", split, predictions_schema(), ids_by_split[split], make_rows, advance)
            summary["splits"][split]["prediction_rows"] = count
    if include_images:
        for split in splits:
            make_rows = lambda chunk, seen=exported[split]: _image_rows(chunk, seen, face_variant, summary)  # noqa: E731
            count = _write_config(root, summary, "images", split, images_schema(), ids_by_split[split], make_rows, advance, IMAGE_CHUNK)
            summary["splits"][split]["image_rows"] = count
            summary["splits"][split]["rows_without_image"] = summary["splits"][split]["rows"] - count
    (root / "README.md").write_text(dataset_card(profile, tax, summary, include_annotations, include_images, dataset_version),
                                    encoding="utf-8")
    return summary


def _export_rows(chunk, profile, tax, key_of, preferred, stats, exported: set[int]) -> list[dict]:
    images = Image.objects.filter(id__in=chunk).order_by("vispr_id").values_list("id", "vispr_id", "published_level", "published_score")
    scores = {
        image_id: (labels, level, score)
        for image_id, labels, level, score in ImageScore.objects.filter(profile=profile, image_id__in=chunk).values_list(
            "image_id", "binary_labels", "level", "score"
        )
    }
    ground_truth = _ground_truth_labels(chunk, key_of, preferred, len(tax.keys))
    rows = []
    for image_id, vispr_id, published_level, published_score in images:
        if published_level is not None and published_score is not None:
            labels = ground_truth.get(image_id)
            if labels is None:
                stats["skipped_no_labels"] += 1
                continue
            level, score = published_level, published_score
            stats["published"] += 1
        elif image_id in scores:
            labels, level, score = scores[image_id]
            stats["computed"] += 1
        else:
            stats["skipped_no_score"] += 1
            continue
        rows.append({"id": vispr_id, "binary_labels": nest(labels, tax), "level": int(level), "score": float(score)})
        exported.add(image_id)
        stats["rows"] += 1
        stats["levels"][int(level)] += 1
    return rows


def _annotation_rows(chunk, tax, key_of, annotators: dict[int, dict], seen: dict) -> list[dict]:
    """One row per (image, annotator) with submitted labels; `annotators`: id -> its fields, read once per export."""
    vispr_of = dict(Image.objects.filter(id__in=chunk).values_list("id", "vispr_id"))
    # Unfinished work (a draft labeling) is not an annotation yet.
    drafts = set(Labeling.objects.filter(image_id__in=chunk, status=Labeling.STATUS_DRAFT).values_list("image_id", "annotator_id"))
    assisted = {(image_id, annotator_id): (bool(flag), list(seen or []), dict(shown or {})) for image_id, annotator_id, flag, seen, shown
                in Labeling.objects.filter(image_id__in=chunk, status=Labeling.STATUS_SUBMITTED, annotator__kind=Annotator.KIND_HUMAN)
                .values_list("image_id", "annotator_id", "assisted", "suggestions_seen", "suggested_values")}
    pairs: dict[tuple[int, int], tuple[dict, dict]] = {}
    for image_id, annotator_id, attribute_id, value, rationale in Label.objects.filter(image_id__in=chunk).values_list(
        "image_id", "annotator_id", "attribute_id", "value", "rationale"
    ):
        key = key_of.get(attribute_id)
        if key is None or (image_id, annotator_id) in drafts:
            continue
        values, rationales = pairs.setdefault((image_id, annotator_id), ({}, {}))
        values[key] = value
        rationales[key] = rationale
    rows = []
    for (image_id, annotator_id), (values, rationales) in sorted(pairs.items(), key=lambda p: (vispr_of[p[0][0]], annotators[p[0][1]]["name"])):
        public = public_annotator(annotators[annotator_id])
        rows.append(
            {
                "id": vispr_of[image_id],
                "annotator": public["name"],
                "annotator_kind": public["kind"],
                "provider": public["provider"],
                "model_name": public["model_name"],
                "prompt_version": public["prompt_version"],
                "labels": {k: values.get(k) for k in tax.keys},
                "rationales": {k: rationales.get(k) for k in tax.keys},
                **_assisted_fields(assisted.get((image_id, annotator_id)), values, tax.keys),
            }
        )
        entry = seen.setdefault(public["name"], {**public, "rows": 0})
        entry["rows"] += 1
    return rows


def _assisted_fields(record: tuple | None, values: dict, keys) -> dict:
    """The annotations row's assisted columns from a person's labeling (flag, models seen, suggestion per attribute);
    None for a row that is not a person's submitted labeling (a model, VISPR, an imported ground truth)."""
    if record is None:
        return {"assisted": None, "suggestions_seen": None, "answers_as_suggested": {k: None for k in keys}}
    flag, seen, shown = record
    matches = {k: (None if k not in shown or values.get(k) is None else float(values[k]) == float(shown[k])) for k in keys}
    return {"assisted": flag, "suggestions_seen": seen, "answers_as_suggested": matches}


def _prediction_rows(chunk, bounds: engine.Bounds, seen: dict) -> list[dict]:
    """One row per result of a judge run (annotate runs' labels are in the `annotations` configuration)."""
    results = (
        RunResult.objects.filter(image_id__in=chunk, run__task=Run.TASK_JUDGE)
        .order_by("image__vispr_id", "run_id")
        .values_list(
            "image__vispr_id", "run_id", "run__provider", "run__model_name", "run__prompt_version", "run__strategy",
            "run__counterfactual_faces", "run__endpoint", "run__stand_in", "outcome", "score",
        )
    )
    rows = []
    results = list(results)
    provenance = {run.pk: run.provenance for run in Run.objects.filter(pk__in={r[1] for r in results})
                  .only("pk", "stand_in", "selection", "request_params")}
    for (vispr_id, run_id, provider, model_name, prompt_version, strategy, counterfactual_faces, endpoint, stand_in,
         outcome, score) in results:
        rows.append(
            {
                "id": vispr_id,
                "run_id": run_id,
                "provider": provider,
                "model_name": model_name,
                "prompt_version": prompt_version,
                "strategy": strategy,
                "counterfactual_faces": counterfactual_faces,
                "endpoint": endpoint,
                "stand_in": stand_in,
                "provenance": provenance[run_id],
                "outcome": outcome,
                "predicted_score": score,
                "predicted_level": None if score is None else engine.level_of_score(score, bounds),
            }
        )
        entry = seen.setdefault(str(run_id), {
            "provider": provider, "model_name": model_name, "prompt_version": prompt_version, "strategy": strategy,
            "counterfactual_faces": counterfactual_faces, "endpoint": endpoint, "stand_in": stand_in,
            "provenance": provenance[run_id], "rows": 0,
        })
        entry["rows"] += 1
    return rows


def _image_rows(chunk, exported: set[int], face_variant: dict | None = None, summary: dict | None = None) -> list[dict]:
    """The stored bytes (cleaned and stripped of metadata when they entered) of the exported rows' images;
    with `face_variant`, those of their face-anonymized variants (an image without one is left out)."""
    storage = Image._meta.get_field("file").storage
    variants = variant_files(chunk, face_variant) if face_variant else None
    rows = []
    for image_id, vispr_id, name in Image.objects.filter(id__in=chunk).exclude(file="").order_by("vispr_id").values_list("id", "vispr_id", "file"):
        if image_id not in exported:
            continue
        if variants is not None:
            if image_id not in variants:
                continue  # never the original in its place
            name = variants[image_id]
            if summary is not None:
                summary["anonymized_images"] = summary.get("anonymized_images", 0) + 1
        with storage.open(name, "rb") as fh:
            data = fh.read()
        # The stored name is a content hash; the exported one is the VISPR id.
        rows.append({"id": vispr_id, "image": {"bytes": data, "path": f"{vispr_id}{Path(name).suffix.lower()}"}})
    return rows
