"""Judge-run metrics under a scoring profile (cached per run), and the points of a run's plots."""
from __future__ import annotations

import time

import numpy as np

from inference.models import Run

from .. import metrics as metrics_lib
from .. import queries
from ..models import ComputedMetrics, ScoringProfile
from .cache import in_background, jsonable, serve_stale

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
        elif in_background(entry):  # slow to compute: the stored figures while a job recomputes them
            out[rid] = serve_stale(entry)
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
            rows.append(ComputedMetrics(key=keys[rid], fingerprint=prints[rid], data=data, seconds=time.perf_counter() - started,
                                        spec={"kind": "run_metrics", "run_id": rid, "profile": profile.pk}))
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
    report["profile"] = {"id": profile.pk, "label": profile.label, "provisional": profile.provisional}
    return report


def refresh_run_metrics(run_id: int) -> dict:
    """Compute (or confirm) a run's metrics under the active profile; call when a judge run finishes."""
    return run_metrics([Run.objects.get(pk=run_id)], ScoringProfile.active())[run_id]


def run_points(run: Run, profile: ScoringProfile) -> dict[str, np.ndarray]:
    """The run's per-image predictions beside ground truth, for the plots (two + one queries)."""
    gt = queries.ground_truth(profile)
    return queries.align(queries.judge_results([run.pk])[run.pk], gt)
