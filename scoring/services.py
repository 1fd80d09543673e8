"""Turn stored labels into stored consensus and scores; feed the scoring pages (reads the ORM,
computes with scoring.engine / scoring.metrics / scoring.agreement, caches results)."""
from __future__ import annotations

import math
import time
from typing import Iterable

import numpy as np
from django.db import IntegrityError, transaction

from annotations import taxonomy
from annotations.models import Adjudication, Annotator, Attribute, Image, Label, TaxonomyVersion
from core.audit import audit
from inference.models import Run

from . import agreement as agreement_lib
from . import calibration, engine, paired, queries, ranking, significance
from . import metrics as metrics_lib
from .models import ComputedMetrics, ImageScore, ScoringProfile

CHUNK = 2000


def _chunks(ids: list[int], size: int = CHUNK) -> Iterable[list[int]]:
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def recompute_scores(profile: ScoringProfile, image_ids: Iterable[int] | None = None) -> dict:
    """Recompute consensus and score of images under `profile` (all images when ids are None).

    Streams in chunks: labels are read as value tuples, never as model instances. Images whose
    consensus set is incomplete lose any stored score (they have no consensus yet).
    """
    tax = taxonomy.active()
    keys = tax.keys
    key_index = {k: i for i, k in enumerate(keys)}
    attr_levels = [tax.level_of[k] for k in keys]
    attr_ids = taxonomy.attribute_ids()
    attr_key_by_id = {v: k for k, v in attr_ids.items()}
    consensus_ids = list(profile.consensus_annotators.values_list("id", flat=True))
    if not consensus_ids:
        raise ValueError(f"Scoring profile {profile.name!r} has no consensus annotators.")
    ann_index = {a: i for i, a in enumerate(consensus_ids)}
    if image_ids is None:
        ids = list(Image.objects.order_by("id").values_list("id", flat=True))
    else:
        ids = sorted(set(image_ids))
    stored = incomplete = 0
    for chunk in _chunks(ids):
        pos = {image_id: i for i, image_id in enumerate(chunk)}
        values = np.full((len(consensus_ids), len(chunk), len(keys)), np.nan)
        for image_id, annotator_id, attribute_id, value in Label.objects.filter(
            image_id__in=chunk, annotator_id__in=consensus_ids
        ).values_list("image_id", "annotator_id", "attribute_id", "value"):
            key = attr_key_by_id.get(attribute_id)
            if key is not None:
                values[ann_index[annotator_id], pos[image_id], key_index[key]] = value
        adjudications = np.full((len(chunk), len(keys)), np.nan)
        for image_id, attribute_id, value in Adjudication.objects.filter(image_id__in=chunk).values_list(
            "image_id", "attribute_id", "value"
        ):
            key = attr_key_by_id.get(attribute_id)
            if key is not None:
                adjudications[pos[image_id], key_index[key]] = value
        binary, complete = engine.consensus_array(values, adjudications)
        counts = engine.level_counts_array(binary, attr_levels)
        levels, scores = engine.severity_array(counts, profile.bounds, profile.weights or engine.WEIGHTS)
        rows = []
        for i, image_id in enumerate(chunk):
            if not complete[i]:
                continue
            rows.append(
                ImageScore(
                    image_id=image_id,
                    profile=profile,
                    binary_labels={k: int(binary[i, j]) for j, k in enumerate(keys)},
                    n1=int(counts[i, 0]), n2=int(counts[i, 1]), n3=int(counts[i, 2]), n4=int(counts[i, 3]),
                    level=int(levels[i]),
                    score=float(scores[i]),
                )
            )
        with transaction.atomic():
            incomplete_ids = [image_id for i, image_id in enumerate(chunk) if not complete[i]]
            ImageScore.objects.filter(profile=profile, image_id__in=incomplete_ids).delete()
            ImageScore.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["image", "profile"],
                update_fields=["binary_labels", "n1", "n2", "n3", "n4", "level", "score", "computed_at"],
            )
        stored += len(rows)
        incomplete += len(chunk) - len(rows)
    return {"scored": stored, "incomplete": incomplete}


def rescore_image(image_id: int) -> None:
    """Recompute one image under every profile (after a label change or an adjudication)."""
    for profile in ScoringProfile.objects.filter(consensus_annotators__isnull=False).distinct():
        recompute_scores(profile, [image_id])


# =============================================================================================
# Cached computations for the scoring pages (metrics, agreement, disagreements), adjudication and
# the counterfactual comparison. The numbers come from scoring.metrics / scoring.agreement; this
# module only reads the ORM (mostly through scoring.queries), caches and writes.

# Level 1-2 attributes that are read off documents, text, skin or objects rather than off a face:
# a "counterfactual faces" run that drops its score on these images ignores real risk.
SENSITIVE_NON_FACE = (
    "gov_ids", "unique_body_markings", "contact_details", "full_legal_name",
    "non_unique_id", "medical_data", "financial_data",
)


def jsonable(value):
    """numpy scalars and arrays to Python; NaN and infinities to None (PostgreSQL's jsonb refuses NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def cached(key: str, fingerprint: str, compute) -> dict:
    """The stored result for `key` if its fingerprint matches, else compute, store and return it."""
    entry = ComputedMetrics.objects.filter(key=key).only("fingerprint", "data").first()
    if entry is not None and entry.fingerprint == fingerprint:
        return entry.data
    started = time.perf_counter()
    data = jsonable(compute())
    ComputedMetrics.objects.update_or_create(
        key=key, defaults={"fingerprint": fingerprint, "data": data, "seconds": time.perf_counter() - started}
    )
    return data


# ---------------------------------------------------------------------------------------------
# Judge-run metrics


def _run_key(run_id: int, profile: ScoringProfile) -> str:
    return f"run-metrics:{run_id}:profile:{profile.pk}"


def run_metrics(runs: list[Run], profile: ScoringProfile) -> dict[int, dict]:
    """Metrics of many judge runs, from the cache where fresh; a constant number of queries.

    Stale or missing runs are computed together: their results are read in one query and the
    ground truth once.
    """
    run_ids = [r.pk for r in runs]
    if not run_ids:
        return {}
    gt_print = queries.ground_truth_fingerprint(profile)
    prints = {rid: queries.digest(p, gt_print) for rid, p in queries.run_fingerprints(runs).items()}
    keys = {rid: _run_key(rid, profile) for rid in run_ids}
    stored = {e.key: e for e in ComputedMetrics.objects.filter(key__in=keys.values())}
    out, missing = {}, []
    for rid in run_ids:
        entry = stored.get(keys[rid])
        if entry is not None and entry.fingerprint == prints[rid]:
            out[rid] = entry.data
        else:
            missing.append(rid)
    if missing:
        gt = queries.ground_truth(profile)
        results = queries.judge_results(missing)
        rows = []
        for rid in missing:
            started = time.perf_counter()
            data = jsonable(compute_run_metrics(results[rid], gt, profile))
            out[rid] = data
            rows.append(ComputedMetrics(key=keys[rid], fingerprint=prints[rid], data=data, seconds=time.perf_counter() - started))
        ComputedMetrics.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["key"], update_fields=["fingerprint", "data", "seconds", "computed_at"]
        )
    return out


def compute_run_metrics(results: dict, gt: "queries.GroundTruth", profile: ScoringProfile) -> dict:
    aligned = queries.align(results, gt)
    report = metrics_lib.evaluate(aligned["gt"], aligned["gt_level"], aligned["pred"], aligned["outcome"], profile.bounds)
    report["without_ground_truth"] = aligned["without_gt"]
    report["profile"] = {"id": profile.pk, "label": profile.label, "provisional": profile.provisional}
    return report


def refresh_run_metrics(run_id: int) -> dict:
    """Compute (or confirm) a run's metrics under the active profile; call when a judge run finishes."""
    return run_metrics([Run.objects.get(pk=run_id)], ScoringProfile.active())[run_id]


def run_points(run: Run, profile: ScoringProfile) -> dict[str, np.ndarray]:
    """The run's per-image predictions beside ground truth, for the plots (two + one queries)."""
    gt = queries.ground_truth(profile)
    return queries.align(queries.judge_results([run.pk])[run.pk], gt)


# ---------------------------------------------------------------------------------------------
# Agreement


def agreement_study(split: str = "") -> dict:
    fingerprint = queries.label_fingerprint(split)

    def compute():
        return agreement_lib.agreement_report(queries.load_labels(split=split))

    return cached(f"agreement:{split or 'all'}", fingerprint, compute)


def annotate_run_agreement(run: Run) -> dict:
    """For an annotate run: its model annotator vs each imported ground truth and vs the human
    majority, per attribute, over the run's images."""
    if run.annotator_id is None:
        return {"annotator": None, "comparisons": []}
    image_ids = list(run.image_ids or [])
    data = queries.load_labels(image_ids=image_ids)
    if run.annotator_id not in data.annotator_ids:
        return {"annotator": run.annotator.name, "comparisons": []}
    values = np.asarray(data.values)
    binary = agreement_lib.binarise_array(values)
    attr_levels = np.asarray(data.attr_levels)
    me = data.annotator_ids.index(run.annotator_id)
    comparisons = []
    for i, kind in enumerate(data.kinds):
        if kind == agreement_lib.GROUND_TRUTH and i != me:
            comparisons.append({"against": data.names[i], **agreement_lib.breakdown(binary[me], binary[i], None, None, attr_levels, data.keys)})
    is_human = [k == agreement_lib.HUMAN for k in data.kinds]
    if any(is_human):
        majority = agreement_lib.human_majority(values, is_human)
        comparisons.append({"against": agreement_lib.MAJORITY, **agreement_lib.breakdown(binary[me], majority, None, None, attr_levels, data.keys)})
    return jsonable({"annotator": data.names[me], "comparisons": comparisons})


# ---------------------------------------------------------------------------------------------
# Disagreements and adjudication


def disagreement_queue(profile: ScoringProfile, split: str = "") -> dict:
    """Every image with disputed attributes and what resolving them could change (cached)."""
    fingerprint = queries.digest(queries.label_fingerprint(split), profile.pk, profile.lo1, profile.lo2, profile.lo3)

    def compute():
        data = queries.load_labels(split=split)
        adjudications = queries.adjudication_array(data.image_ids, data.keys)
        impact = agreement_lib.dispute_impact(data.values, adjudications, data.attr_levels, profile.bounds)
        # Pairs of annotators who disagree on an image (any attribute): one vectorised pass per pair.
        pair_masks = [
            ([data.annotator_ids[a], data.annotator_ids[b]], agreement_lib.pair_disagrees(data.values, a, b))
            for a in range(len(data.names)) for b in range(a + 1, len(data.names))
        ]
        rows = []
        for i in np.flatnonzero(impact["n_disputed"] > 0):
            rows.append({
                "image_id": data.image_ids[i],
                "disputed": [data.keys[j] for j in np.flatnonzero(impact["disputed"][i])],
                "n_disputed": int(impact["n_disputed"][i]),
                "score_lo": float(impact["score_lo"][i]),
                "score_hi": float(impact["score_hi"][i]),
                "level_lo": int(impact["level_lo"][i]),
                "level_hi": int(impact["level_hi"][i]),
                "impact": float(impact["impact"][i]),
                "level_changes": bool(impact["level_changes"][i]),
                "pairs": [ids for ids, mask in pair_masks if mask[i]],
            })
        annotators = [{"id": a, "name": n, "kind": k} for a, n, k in zip(data.annotator_ids, data.names, data.kinds)]
        return {"rows": rows, "annotators": annotators}

    return cached(f"disagreements:{split or 'all'}:profile:{profile.pk}", fingerprint, compute)


def active_attributes() -> dict[str, Attribute]:
    tv = TaxonomyVersion.objects.order_by("-created_at", "-id").first()
    return {a.key: a for a in Attribute.objects.filter(taxonomy=tv)}


class AdjudicationConflict(Exception):
    """Another adjudicator's first decision on the same (image, attribute) committed while this one was
    being written; nothing of this one was stored. `message` says what won."""

    status = 409

    def __init__(self, winner: Adjudication):
        self.winner = winner
        self.message = (
            f"Another adjudicator ({winner.adjudicator}) decided {winner.attribute.key} of this image at the same time: "
            f"{winner.value:g}. Your decision was not saved; review theirs and set the label again if you disagree."
        )
        super().__init__(self.message)


def adjudicate(user, image: Image, attribute: Attribute, value: float, note: str) -> Adjudication:
    """Set the final label of one (image, attribute): never touches Labels; history + audit; rescore.

    A later decision replaces an earlier one. Two first decisions at the same instant both find no row
    to lock; the unique constraint lets one insert win and the other raises AdjudicationConflict.
    """
    if value not in engine.VALID_LABELS:
        raise ValueError(f"{value!r} is not a valid label (0, 0.5 or 1).")
    with transaction.atomic():
        adjudication = Adjudication.objects.select_for_update().filter(image=image, attribute=attribute).first()
        old = None if adjudication is None else {"value": adjudication.value, "note": adjudication.note}
        if adjudication is None:
            adjudication = Adjudication(image=image, attribute=attribute)
        adjudication.value, adjudication.note, adjudication.adjudicator = value, note, user
        try:
            with transaction.atomic():  # a savepoint: the losing insert must not spoil the transaction
                adjudication.save()
        except IntegrityError:
            if old is not None:
                raise
            winner = Adjudication.objects.select_related("adjudicator", "attribute").get(image=image, attribute=attribute)
            raise AdjudicationConflict(winner) from None
        audit(user, "adjudicate", adjudication, image_id=image.pk, vispr_id=image.vispr_id, attribute=attribute.key,
              old=old, new={"value": value, "note": note})
        rescore_image(image.pk)
    return adjudication


# ---------------------------------------------------------------------------------------------
# Counterfactual faces


def counterfactual_candidates() -> list[tuple[Run, Run]]:
    """(without, with) pairs of finished judge runs sharing provider, model and strategy."""
    runs = queries.finished_judge_runs()
    plain = [r for r in runs if not r.counterfactual_faces and not r.face_variant]  # pixel-level runs: three_way
    faces = [r for r in runs if r.counterfactual_faces and not r.face_variant]
    return [(a, b) for a in plain for b in faces if (a.provider, a.model_name, a.strategy) == (b.provider, b.model_name, b.strategy)]


def consensus_labels(image_ids: list[int], profile: ScoringProfile) -> dict[int, dict]:
    """image id -> {attribute key: 1, ...}: the profile's consensus, else the ground-truth annotator's labels
    (images with neither are absent)."""
    binary = {}
    for image_id, labels in ImageScore.objects.filter(profile=profile, image_id__in=image_ids).values_list("image_id", "binary_labels"):
        binary[image_id] = labels
    missing = [i for i in image_ids if i not in binary]
    if missing:
        attr_key = {v: k for k, v in taxonomy.attribute_ids().items()}
        for image_id, attribute_id in Label.objects.filter(
            image_id__in=missing, annotator__kind=Annotator.KIND_GROUND_TRUTH, value=1.0
        ).values_list("image_id", "attribute_id"):
            binary.setdefault(image_id, {})[attr_key.get(attribute_id)] = 1
    return binary


def counterfactual(base: Run, cf: Run, profile: ScoringProfile, drop: float) -> dict:
    """Per-image score change from `base` to `cf`, collapses, and groups by sensitive non-face attributes."""
    results = queries.judge_results([base.pk, cf.pk])
    def ok_scores(r):
        keep = (r["outcome"] == "ok") & np.isfinite(r["score"])
        return dict(zip(r["image_id"][keep].tolist(), r["score"][keep].tolist()))

    before, after = ok_scores(results[base.pk]), ok_scores(results[cf.pk])
    common = sorted(set(before) & set(after))
    binary = consensus_labels(common, profile)
    vispr = dict(Image.objects.filter(id__in=common).values_list("id", "vispr_id"))
    rows = []
    for image_id in common:
        delta = after[image_id] - before[image_id]
        labels = binary.get(image_id, {})
        sensitive = [k for k in SENSITIVE_NON_FACE if labels.get(k) == 1]
        rows.append({
            "image_id": image_id, "vispr_id": vispr.get(image_id, ""), "score_without": before[image_id],
            "score_with": after[image_id], "change": delta, "collapsed": delta <= -drop, "sensitive_non_face": sensitive,
            "has_consensus": image_id in binary,
        })
    deltas = np.array([r["change"] for r in rows], dtype=float)
    groups = []
    for key in SENSITIVE_NON_FACE:
        members = [r for r in rows if key in r["sensitive_non_face"]]
        groups.append({
            "attribute": key, "images": len(members), "collapsed": sum(r["collapsed"] for r in members),
            "mean_change": float(np.mean([r["change"] for r in members])) if members else None,
        })
    counts, edges = metrics_lib.histogram(deltas, bins=40, lo=-1.0, hi=1.0)
    return jsonable({
        "common": len(common),
        "only_without": len(set(before) - set(after)),
        "only_with": len(set(after) - set(before)),
        "mean_change": float(deltas.mean()) if deltas.size else None,
        "median_change": float(np.median(deltas)) if deltas.size else None,
        "change_test": significance.paired_change(deltas),
        "collapsed": int(sum(r["collapsed"] for r in rows)),
        "collapsed_sensitive": int(sum(r["collapsed"] and bool(r["sensitive_non_face"]) for r in rows)),
        "rows": rows,
        "groups": groups,
        "histogram": {"counts": counts, "edges": edges},
    })


def filter_disputes(rows: list[dict], *, attribute: str = "", level: int | None = None, pair: tuple[int, int] | None = None,
                    current: dict | None = None, sort: str = "impact") -> list[dict]:
    """Filter the cached queue by disputed attribute, current consensus level and disagreeing pair; sort."""
    current = current or {}
    out = []
    for r in rows:
        if attribute and attribute not in r["disputed"]:
            continue
        if level is not None and (current.get(r["image_id"]) or (None,))[0] != level:
            continue
        if pair is not None and list(pair) not in [sorted(p) for p in r["pairs"]]:
            continue
        out.append(r)
    keys = {
        "impact": lambda r: (-r["impact"], r["image_id"]),
        "level": lambda r: (not r["level_changes"], -r["impact"], r["image_id"]),
        "disputed": lambda r: (-r["n_disputed"], -r["impact"], r["image_id"]),
        "id": lambda r: r["image_id"],
    }
    return sorted(out, key=keys[sort])


# ---------------------------------------------------------------------------------------------
# Like-for-like leaderboard, paired comparison, calibration (issue 13)


def _predictions(results: dict, gt: "queries.GroundTruth") -> "ranking.RunPredictions":
    aligned = queries.align(results, gt)
    valid = (aligned["outcome"] == "ok") & np.isfinite(aligned["pred"])
    return ranking.RunPredictions(aligned["image_id"], aligned["gt"], aligned["gt_level"], aligned["pred"], valid)


def leaderboard_ranking(runs: list[Run], profile: ScoringProfile, floor: float) -> dict:
    """The common-set ranking of `runs` (cached; recomputed when a run, the ground truth or the floor changes)."""
    if not runs:
        return {"floor": floor, "common_size": 0, "ranked": {}, "unranked": {}}
    gt_print = queries.ground_truth_fingerprint(profile)
    prints = queries.run_fingerprints(runs)
    ids = sorted(r.pk for r in runs)
    fingerprint = queries.digest(gt_print, floor, [(i, prints[i]) for i in ids])
    key = f"leaderboard:{queries.digest(ids)}:profile:{profile.pk}"

    def compute():
        gt = queries.ground_truth(profile)
        results = queries.judge_results(ids)
        data = ranking.common_set_ranking({rid: _predictions(results[rid], gt) for rid in ids}, profile.bounds, floor)
        return {**data, "ranked": {str(k): v for k, v in data["ranked"].items()},
                "unranked": {str(k): v for k, v in data["unranked"].items()}}

    return cached(key, fingerprint, compute)


def compare_runs(run_a: Run, run_b: Run, profile: ScoringProfile) -> dict:
    """Paired comparison of two judge runs on the images both answered (cached)."""
    gt_print = queries.ground_truth_fingerprint(profile)
    prints = queries.run_fingerprints([run_a, run_b])
    fingerprint = queries.digest(gt_print, prints[run_a.pk], prints[run_b.pk])

    def compute():
        gt = queries.ground_truth(profile)
        results = queries.judge_results([run_a.pk, run_b.pk])
        a, b = _predictions(results[run_a.pk], gt), _predictions(results[run_b.pk], gt)
        common = np.intersect1d(a.image_id[a.valid], b.image_id[b.valid])
        ka, kb = np.isin(a.image_id, common) & a.valid, np.isin(b.image_id, common) & b.valid
        oa, ob = np.argsort(a.image_id[ka]), np.argsort(b.image_id[kb])
        data = paired.paired_comparison(a.gt[ka][oa], a.gt_level[ka][oa], a.pred[ka][oa], b.pred[kb][ob], profile.bounds)
        data["coverage"] = {"a": a.coverage, "b": b.coverage}
        return data

    return cached(f"paired:{run_a.pk}:{run_b.pk}:profile:{profile.pk}", fingerprint, compute)


def run_calibration(run: Run, profile: ScoringProfile) -> dict:
    """Per-attribute positive-rate differences of an annotate run vs the human majority and vs the
    consensus ground truth of the active profile, over the run's images."""
    if run.annotator_id is None:
        return {"annotator": None, "human_majority": [], "consensus": [], "images": 0}
    image_ids = list(run.image_ids or [])
    data = queries.load_labels(image_ids=image_ids)
    keys, levels = data.keys, data.attr_levels
    if run.annotator_id not in data.annotator_ids:
        return {"annotator": run.annotator.name, "human_majority": [], "consensus": [], "images": len(image_ids)}
    values = np.asarray(data.values)
    me = data.annotator_ids.index(run.annotator_id)
    model = agreement_lib.binarise_array(values[me])
    is_human = [k == agreement_lib.HUMAN for k in data.kinds]
    majority = agreement_lib.human_majority(values, is_human)
    consensus = np.full(model.shape, np.nan)
    pos = {image_id: i for i, image_id in enumerate(data.image_ids)}
    key_index = {k: j for j, k in enumerate(keys)}
    for image_id, labels in ImageScore.objects.filter(profile=profile, image_id__in=data.image_ids).values_list("image_id", "binary_labels"):
        for key, value in labels.items():
            if key in key_index:
                consensus[pos[image_id], key_index[key]] = value
    return jsonable({
        "annotator": data.names[me], "images": len(data.image_ids),
        "human_majority": calibration.attribute_calibration(model, majority, keys, levels),
        "consensus": calibration.attribute_calibration(model, consensus, keys, levels),
    })
