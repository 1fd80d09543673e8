"""Judge-run metrics under a scoring profile (cached per run), and the points of a run's plots."""
from __future__ import annotations

import time

import numpy as np

from annotations.models import Image
from inference.models import Run

from .. import engine, sensitivity
from .. import metrics as metrics_lib
from .. import queries
from ..models import ComputedMetrics, ImageScore, ScoringProfile
from .cache import cached, first_in_background, in_background, jsonable, serve_stale, start_pending

# Judge-run metrics


def run_key(run_id: int, profile: ScoringProfile) -> str:
    """The cache key of a run's metrics under a profile."""
    return f"run-metrics:{run_id}:profile:{profile.pk}"


def run_metrics(runs: list[Run], profile: ScoringProfile, gt_print: str | None = None) -> dict[int, dict]:
    """Metrics of many judge runs, from the cache where fresh; a constant number of queries.

    Stale or missing runs are computed together: their results are read in one query and the
    ground truth once. `gt_print`: the profile's ground-truth fingerprint, where the caller has it.
    """
    run_ids = [r.pk for r in runs]
    if not run_ids:
        return {}
    gt_print = gt_print or queries.ground_truth_fingerprint(profile)
    prints = {rid: queries.digest(p, gt_print) for rid, p in queries.run_fingerprints(runs).items()}
    keys = {rid: run_key(rid, profile) for rid in run_ids}
    stored = {e.key: e for e in ComputedMetrics.objects.filter(key__in=keys.values())}
    out, missing = {}, []
    for rid in run_ids:
        entry = stored.get(keys[rid])
        if entry is not None and entry.fingerprint == prints[rid]:
            out[rid] = entry.data
        elif in_background(entry):  # slow to compute: the stored figures while a job recomputes them
            out[rid] = serve_stale(entry)
        else:
            missing.append(rid)
    spec = {"kind": "run_metrics", "profile": profile.pk}
    new = [rid for rid in missing if keys[rid] not in stored]
    if new and first_in_background(spec, lambda: sum(r.total or 0 for r in runs if r.pk in missing)):
        start_pending({keys[rid]: {**spec, "run_id": rid} for rid in new})  # raises Pending: a job computes them
    if missing:
        gt = queries.ground_truth(profile, gt_print)
        results = queries.judge_results(missing)
        rows = []
        for rid in missing:
            started = time.perf_counter()
            data = jsonable(compute_run_metrics(results[rid], gt, profile))
            out[rid] = data
            rows.append(ComputedMetrics(key=keys[rid], fingerprint=prints[rid], data=data, seconds=time.perf_counter() - started,
                                        spec={**spec, "run_id": rid}))
        ComputedMetrics.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["key"], update_fields=["fingerprint", "data", "seconds", "computed_at", "spec"]
        )
    return out


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    run_metrics([Run.objects.get(pk=spec["run_id"])], ScoringProfile.objects.get(pk=spec["profile"]))


def compute_run_metrics(results: dict, gt: "queries.GroundTruth", profile: ScoringProfile) -> dict:
    aligned = queries.align(results, gt)
    report = metrics_lib.evaluate(aligned["gt"], aligned["gt_level"], aligned["pred"], aligned["outcome"], profile.bounds)
    report["without_ground_truth"] = aligned["without_gt"]
    report["profile"] = {"id": profile.pk, "name": profile.name, "version": profile.version, "label": profile.label,
                         "provisional": profile.provisional}
    return report


def refresh_run_metrics(run_id: int) -> dict:
    """Compute (or confirm) a run's metrics under the active profile; call when a judge run finishes."""
    return run_metrics([Run.objects.get(pk=run_id)], ScoringProfile.active())[run_id]


def run_points(run: Run, profile: ScoringProfile) -> dict[str, np.ndarray]:
    """The run's per-image predictions beside ground truth, for the plots (two + one queries)."""
    gt = queries.ground_truth(profile)
    return queries.align(queries.judge_results([run.pk])[run.pk], gt)


# Weight-set sensitivity


def sensitivity_candidates(profile: ScoringProfile) -> tuple[list[dict], str]:
    """The weight sets (each with its own fitted boundaries) the profile's fit could not tell apart; without a
    fit (or with one candidate), the named weight sets under the profile's boundaries."""
    own = {"name": f"this profile ({profile.name} v{profile.version})", "weights": list(profile.weights or engine.WEIGHTS),
           "lo": [profile.lo1, profile.lo2, profile.lo3]}
    fitted = [c for c in ((profile.fit_report or {}).get("joint") or {}).get("candidates", []) if c.get("lo")]
    if len(fitted) >= 2:
        return [own] + fitted, "every weight set that reproduces the stored published rows, each with its own fitted boundaries"
    named = [{"name": name, "weights": list(w), "lo": own["lo"]} for name, w in engine.WEIGHT_SETS.items()]
    return [own] + named, "the fit does not leave several candidates: the named weight sets under this profile's boundaries"


def weight_sensitivity(run: Run, profile: ScoringProfile, gt_print: str | None = None) -> dict:
    """The run's point metrics under each candidate weight set (cached per run and profile)."""
    fingerprint = queries.digest(queries.run_fingerprints([run])[run.pk], gt_print or queries.ground_truth_fingerprint(profile),
                                 profile.version, profile.fit_report.get("fitted_at") if profile.fit_report else None)

    def compute():
        results = queries.judge_results([run.pk])[run.pk]
        keep = (results["outcome"] == "ok") & np.isfinite(results["score"])
        ids, pred = results["image_id"][keep], results["score"][keep]
        counts = {i: c for i, *c in ImageScore.objects.filter(profile=profile, image_id__in=ids.tolist()).values_list(
            "image_id", "n1", "n2", "n3", "n4")}
        published = {i: (s, lv) for i, s, lv in Image.objects.filter(id__in=ids.tolist(), published_score__isnull=False,
                                                                    published_level__isnull=False).values_list(
            "id", "published_score", "published_level")}
        has = np.array([i in counts or i in published for i in ids.tolist()], dtype=bool)
        ids, pred = ids[has], pred[has]
        candidates, how = sensitivity_candidates(profile)
        rows = sensitivity.candidate_rows(
            pred, np.array([published.get(i, (np.nan, 0))[0] for i in ids.tolist()], dtype=float),
            np.array([published.get(i, (np.nan, 0))[1] for i in ids.tolist()], dtype=np.int64),
            np.array([counts.get(i, (0, 0, 0, 0)) for i in ids.tolist()], dtype=np.int64).reshape(-1, 4), candidates)
        return {"candidates": how, "rows": rows, "images": int(ids.size),
                "published": int(sum(i in published for i in ids.tolist()))}

    return cached(f"sensitivity:{run.pk}:profile:{profile.pk}", fingerprint, compute,
                  spec={"kind": "sensitivity", "run_id": run.pk, "profile": profile.pk}, size=lambda: run.total or 0)


def refresh_sensitivity(spec: dict) -> None:
    """The refresh job's recomputation of weight_sensitivity (scoring.services.cache.refresh)."""
    weight_sensitivity(Run.objects.get(pk=spec["run_id"]), ScoringProfile.objects.get(pk=spec["profile"]))
