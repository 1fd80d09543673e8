"""ORM reading for the scoring pages: a fixed, small number of queries whatever the data size.

Every function returns plain Python values or numpy arrays for scoring.metrics / scoring.agreement.
Fingerprints are cheap aggregate queries that change whenever the data behind a cached
computation changes (scoring.services keys its cache on them). They are built from exact values only
(counts, ids, timestamps, integer sums): a float sum depends on the order rows are added in, which a
parallel plan on PostgreSQL changes from one call to the next, so a float in a key never hits.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
from django.db.models import BigIntegerField, Count, Exists, F, FloatField, Func, Max, OuterRef, Q, Sum
from django.db.models.functions import Cast

from annotations import label_version, taxonomy
from annotations.models import Adjudication, Annotator, Image, Label, Labeling
from inference.models import Run, RunResult

from .agreement import LabelSet
from .models import ImageScore, ScoringProfile


def digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:32]


# A float column enters a fingerprint as the sum of its values rounded to integers at this scale
# (2**30: scores and label values are in [0, 1], so 10M rows stay far below 2**63). Integer addition
# is exact in any order; a change of a value by more than 2**-31 changes the sum.
EXACT_SCALE = 2**30


class FloatRound(Func):
    """ROUND of a float, computed as a float (Django's Round casts to numeric on PostgreSQL first,
    which costs more than the rest of a fingerprint aggregate put together)."""

    function = "ROUND"
    output_field = FloatField()


def exact_sum(column: str) -> Sum:
    """Sum of a float column as exact integers (see EXACT_SCALE): the same whatever the plan."""
    return Sum(Cast(FloatRound(F(column) * EXACT_SCALE), BigIntegerField()))


# ---------------------------------------------------------------------------------------------
# Ground truth


@dataclass
class GroundTruth:
    """image id -> (score, level, source); published CPRT-Bench values win over computed scores."""

    score: dict[int, float]
    level: dict[int, int]
    source: dict[int, str]


def ground_truth(profile: ScoringProfile) -> GroundTruth:
    """Two queries: the published values, then the active profile's scores for the other images."""
    score, level, source = {}, {}, {}
    for image_id, s, lv in ImageScore.objects.filter(profile=profile).values_list("image_id", "score", "level"):
        score[image_id], level[image_id], source[image_id] = s, lv, "consensus"
    for image_id, s, lv in Image.objects.filter(published_score__isnull=False, published_level__isnull=False).values_list(
        "id", "published_score", "published_level"
    ):
        score[image_id], level[image_id], source[image_id] = s, lv, "published"
    return GroundTruth(score, level, source)


def ground_truth_fingerprint(profile: ScoringProfile) -> str:
    published = Image.objects.filter(published_score__isnull=False, published_level__isnull=False).aggregate(
        n=Count("id"), s=exact_sum("published_score"), lv=Sum("published_level"), ids=Sum("id")
    )
    computed = ImageScore.objects.filter(profile=profile).aggregate(
        n=Count("id"), top=Max("id"), last=Max("computed_at"), s=exact_sum("score"), lv=Sum("level")
    )
    return digest(published, computed, profile.pk, profile.lo1, profile.lo2, profile.lo3, profile.updated_at)


# ---------------------------------------------------------------------------------------------
# Runs


LARGE_RUN_FIELDS = ("image_ids", "item_ids", "prompt_text", "selection", "truth")


def finished_judge_runs(strategy: str = ""):
    runs = Run.objects.filter(task=Run.TASK_JUDGE, status=Run.STATUS_FINISHED)
    if strategy:
        runs = runs.filter(strategy=strategy)
    # The frozen image and item lists and prompt texts are large JSON (1.4 MB a run at 100k images): the leaderboard needs none.
    return list(runs.defer(*LARGE_RUN_FIELDS).order_by("provider", "model_name", "strategy", "counterfactual_faces", "id"))


def run_fingerprints(runs) -> dict[int, str]:
    """A digest per run of the results its metrics depend on.

    [decision] A finished run's results are final (resuming a run changes its status and finish
    time), so its digest is its state, and the leaderboard reads no result rows to check its cache.
    Runs still in progress add their result counts and last result id, from one grouped query
    answered by the (run, outcome) index.
    """
    runs = list(runs)
    open_ids = [r.pk for r in runs if r.status != Run.STATUS_FINISHED]
    found = {}
    if open_ids:
        rows = (
            RunResult.objects.filter(run_id__in=open_ids)
            .values("run_id")
            .annotate(n=Count("id"), ok=Count("id", filter=Q(outcome="ok")), last=Max("id"))
            .order_by()
        )
        found = {row["run_id"]: row for row in rows}
    return {r.pk: digest(r.status, r.finished_at, r.total_images, found.get(r.pk)) for r in runs}


def judge_results(run_ids: list[int]) -> dict[int, dict[str, np.ndarray]]:
    """run id -> arrays image_id, outcome, score (NaN where none), in one query."""
    collected: dict[int, list] = {run_id: [] for run_id in run_ids}
    for row in RunResult.objects.filter(run_id__in=run_ids).order_by("run_id", "image_id").values_list(
        "run_id", "image_id", "outcome", "score"
    ):
        collected[row[0]].append(row[1:])
    out = {}
    for run_id, rows in collected.items():
        out[run_id] = {
            "image_id": np.array([r[0] for r in rows], dtype=np.int64),
            "outcome": np.array([r[1] for r in rows], dtype=object),
            "score": np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=float),
        }
    return out


def align(results: dict[str, np.ndarray], gt: GroundTruth) -> dict[str, np.ndarray]:
    """Keep the results whose image has ground truth; attach its score and level."""
    ids = results["image_id"]
    has = np.array([i in gt.score for i in ids.tolist()], dtype=bool)
    kept = ids[has]
    return {
        "image_id": kept,
        "outcome": results["outcome"][has],
        "pred": results["score"][has],
        "gt": np.array([gt.score[i] for i in kept.tolist()], dtype=float),
        "gt_level": np.array([gt.level[i] for i in kept.tolist()], dtype=np.int64),
        "without_gt": int((~has).sum()),
    }


# ---------------------------------------------------------------------------------------------
# Labels


def _label_filter():
    """Human labels count once their labeling is submitted; model and imported labels always."""
    submitted = Labeling.objects.filter(
        image_id=OuterRef("image_id"), annotator_id=OuterRef("annotator_id"), status=Labeling.STATUS_SUBMITTED
    )
    return Q(annotator__kind__in=[Annotator.KIND_MODEL, Annotator.KIND_GROUND_TRUTH, Annotator.KIND_DATASET]) | Q(Exists(submitted))


# Assisted labels (docs/scoring.md): which human labelings enter a study. "exclude" keeps the independent ones (no
# model suggestion was in view), "only" the assisted ones, "include" every submitted one. Models and imported labels
# are never assisted.
ASSISTED_MODES = ("exclude", "include", "only")


def _assisted_filter(assisted: str) -> Q:
    """Labels of human labelings by `assisted` mode (beside _label_filter, which keeps submitted ones only)."""
    if assisted not in ASSISTED_MODES:
        raise ValueError(f"assisted must be one of {', '.join(ASSISTED_MODES)}; got {assisted!r}.")
    if assisted == "include":
        return Q()
    assisted_labeling = Labeling.objects.filter(image_id=OuterRef("image_id"), annotator_id=OuterRef("annotator_id"), assisted=True)
    human = Q(annotator__kind=Annotator.KIND_HUMAN)
    return (~human | Q(Exists(assisted_labeling))) if assisted == "only" else (~human | ~Q(Exists(assisted_labeling)))


def assisted_counts(split: str = "") -> dict:
    """Submitted human labelings (of the split) and how many of them were made with suggestions in view."""
    labelings = Labeling.objects.filter(status=Labeling.STATUS_SUBMITTED, annotator__kind=Annotator.KIND_HUMAN)
    if split:
        labelings = labelings.filter(image__split=split)
    counts = labelings.aggregate(total=Count("pk"), assisted=Count("pk", filter=Q(assisted=True)))
    return {"human_labelings": counts["total"], "assisted_labelings": counts["assisted"]}


def label_fingerprint(split: str = "") -> str:
    """The label version (annotations.label_version: an integer every write of labels, submitted labelings
    and adjudications bumps in its transaction) with the split: one read of a tiny table, where an
    aggregate over every label cost most of a warm agreement request at 100,000 images (issue 29)."""
    return digest(label_version.current(), split)


def labelings_estimate(split: str = "") -> int:
    """Images (of the split) times annotators: what a study over every label reads, in (image, annotator)
    rows, from two counts (scoring.services.cache decides by it whether a first computation runs inline)."""
    images = Image.objects.filter(split=split) if split else Image.objects.all()
    return images.count() * Annotator.objects.count()


def load_labels(split: str = "", image_ids: list[int] | None = None, annotator_ids: list[int] | None = None,
                assisted: str = "include") -> LabelSet:
    """All counted labels as a (annotators, images, attributes) array; three queries. `assisted` (ASSISTED_MODES):
    which human labelings count, by whether model suggestions were in view."""
    tax = taxonomy.active()
    keys = list(tax.keys)
    key_index = {k: j for j, k in enumerate(keys)}
    attr_key = {v: k for k, v in taxonomy.attribute_ids().items()}
    labels = Label.objects.filter(_label_filter(), _assisted_filter(assisted))
    if split:
        labels = labels.filter(image__split=split)
    if image_ids is not None:
        labels = labels.filter(image_id__in=image_ids)
    if annotator_ids is not None:
        labels = labels.filter(annotator_id__in=annotator_ids)
    rows = list(labels.values_list("annotator_id", "image_id", "attribute_id", "value"))
    annotators = list(Annotator.objects.filter(id__in={r[0] for r in rows}).order_by("kind", "name").values_list("id", "name", "kind"))
    a_index = {a[0]: i for i, a in enumerate(annotators)}
    images = sorted({r[1] for r in rows}) if image_ids is None else sorted(set(image_ids))
    i_index = {image_id: i for i, image_id in enumerate(images)}
    values = np.full((len(annotators), len(images), len(keys)), np.nan)
    if rows:
        arr = np.array([(a_index[a], i_index[i], key_index.get(attr_key.get(t), -1), v) for a, i, t, v in rows], dtype=float)
        arr = arr[arr[:, 2] >= 0]
        values[arr[:, 0].astype(int), arr[:, 1].astype(int), arr[:, 2].astype(int)] = arr[:, 3]
    return LabelSet(
        values=values,
        names=[a[1] for a in annotators],
        kinds=[a[2] for a in annotators],
        keys=keys,
        attr_levels=[tax.level_of[k] for k in keys],
        image_ids=images,
        annotator_ids=[a[0] for a in annotators],
    )


def adjudication_array(image_ids: list[int], keys: list[str]) -> np.ndarray:
    """(images, attributes) adjudicated values, NaN where none; one query."""
    attr_key = {v: k for k, v in taxonomy.attribute_ids().items()}
    key_index = {k: j for j, k in enumerate(keys)}
    i_index = {image_id: i for i, image_id in enumerate(image_ids)}
    out = np.full((len(image_ids), len(keys)), np.nan)
    for image_id, attribute_id, value in Adjudication.objects.values_list("image_id", "attribute_id", "value"):
        if image_id in i_index and attr_key.get(attribute_id) in key_index:
            out[i_index[image_id], key_index[attr_key[attribute_id]]] = value
    return out


def image_labels(image: Image) -> list[dict]:
    """Every counted label of one image with its annotator and rationale (one query)."""
    rows = (
        Label.objects.filter(_label_filter(), image=image)
        .select_related("annotator", "attribute")
        .order_by("annotator__kind", "annotator__name", "attribute__order")
    )
    return [
        {"annotator": r.annotator.name, "annotator_id": r.annotator_id, "kind": r.annotator.kind,
         "key": r.attribute.key, "value": r.value, "rationale": r.rationale}
        for r in rows
    ]


def assisted_labelings(image: Image) -> dict[str, dict]:
    """The image's submitted human labelings made with model suggestions in view: annotator name -> the models seen
    ("from") and the suggestion shown per attribute ("suggested"); one query."""
    rows = Labeling.objects.filter(image=image, status=Labeling.STATUS_SUBMITTED, assisted=True).values_list(
        "annotator__name", "suggestions_seen", "suggested_values")
    return {name: {"from": list(seen or []), "suggested": dict(suggested or {})} for name, seen, suggested in rows}
