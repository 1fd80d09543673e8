"""Judge-run metrics under a scoring profile (cached per run), and the points of a run's plots."""
from __future__ import annotations

import time

import numpy as np
from django.conf import settings

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


def metrics_fingerprints(runs: list[Run], gt_print: str) -> dict[int, str]:
    """run id -> the fingerprint of its metrics: its results' and the ground truth's (`gt_print`)."""
    return {rid: queries.digest(p, gt_print) for rid, p in queries.run_fingerprints(runs).items()}


def run_metrics(runs: list[Run], profile: ScoringProfile, gt_print: str | None = None) -> dict[int, dict]:
    """Metrics of many judge runs, from the cache where fresh; a constant number of queries.

    Stale or missing runs are computed together: their results are read in one query and the
    ground truth once. `gt_print`: the profile's ground-truth fingerprint, where the caller has it.
    """
    run_ids = [r.pk for r in runs]
    if not run_ids:
        return {}
    gt_print = gt_print or queries.ground_truth_fingerprint(profile)
    prints = metrics_fingerprints(runs, gt_print)
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


def refresh_entry(spec: dict) -> bool:
    """The refresh job's recomputation (scoring.services.cache.refresh): the point estimates first where
    `points_first` stores them (True: the job is sent again for the whole figures), else the whole figures."""
    run, profile = Run.objects.get(pk=spec["run_id"]), ScoringProfile.objects.get(pk=spec["profile"])
    if points_first(run, profile):
        return True
    run_metrics([run], profile)
    return False


# The fingerprint of an entry whose point estimates are those of the data fingerprinted after it, and whose
# bootstrap intervals are older (points_first): stale, so served as "updating" and recomputed whole by a job.
POINTS_FIRST = "points-first:"


def points_first(run: Run, profile: ScoringProfile) -> bool:
    """Store the run's point estimates of the data now beside the intervals of its stored figures; True when done.

    [decision] (issue 37) After a change (an adjudication moves one image's ground truth), a run's whole figures
    take seconds at 100,000 images, nearly all of it the bootstrap (500 resamples: 2.3 s of a job's 2.5 s), and one
    worker recomputes every run one after the other (ten runs: 23 s). The point estimates alone take about 0.2 s.
    So a refresh job of an entry that is slow to compute (its last computation took more than
    CPRT_METRICS_INLINE_S), stale, and whose intervals are its own first stores the point estimates of the new
    data (each exactly what the whole computation gives) beside the entry's previous intervals, under the
    fingerprint POINTS_FIRST + the new one, and is sent again behind the jobs queued: every run's point estimates
    are current before any run's intervals are recomputed. Until then the entry is served as stale ("updating",
    with the time of the intervals as `computed_at`), and its `bootstrap` says `"updating": true` with the time of
    the intervals it still shows. An entry whose intervals are already older than its points is recomputed whole,
    so a stream of changes cannot hold the intervals back for more than one job each."""
    key = run_key(run.pk, profile)
    entry = ComputedMetrics.objects.filter(key=key).first()
    if (entry is None or not entry.data or entry.seconds <= settings.CPRT_METRICS_INLINE_S
            or entry.fingerprint.startswith(POINTS_FIRST)):  # its intervals are already older than its points
        return False
    gt_print = queries.ground_truth_fingerprint(profile)
    fingerprint = metrics_fingerprints([run], gt_print)[run.pk]
    if entry.fingerprint == fingerprint:
        return False
    points = jsonable(compute_run_metrics(queries.judge_results([run.pk])[run.pk], queries.ground_truth(profile, gt_print), profile,
                                          n_boot=0))
    data = with_intervals_of(points, entry.data, entry.computed_at)
    # Only over the entry read (a job that stored the whole figures meanwhile keeps them); seconds and computed_at
    # stay those of the whole computation whose intervals are shown.
    return bool(ComputedMetrics.objects.filter(pk=entry.pk, fingerprint=entry.fingerprint).update(
        fingerprint=POINTS_FIRST + fingerprint, data=data))


def with_intervals_of(points: dict, previous: dict, computed_at) -> dict:
    """`points` (a report without bootstrap) with the intervals of `previous` (a whole report) in every
    {"value", "lo", "hi", "defined"} entry, and `bootstrap` saying they are being recomputed."""
    def merge(new, old):
        if not isinstance(new, dict):
            return new
        old = old if isinstance(old, dict) else {}
        if {"value", "lo", "hi", "defined"} <= new.keys():
            return {**new, "lo": old.get("lo"), "hi": old.get("hi"), "defined": old.get("defined", 0)}
        return {k: merge(v, old.get(k)) for k, v in new.items()}

    out = merge(points, previous)
    out["bootstrap"] = {**(previous.get("bootstrap") or {}), "updating": True, "intervals_computed_at": computed_at.isoformat()}
    return out


def compute_run_metrics(results: dict, gt: "queries.GroundTruth", profile: ScoringProfile, n_boot: int = metrics_lib.N_BOOT) -> dict:
    aligned = queries.align(results, gt)
    report = metrics_lib.evaluate(aligned["gt"], aligned["gt_level"], aligned["pred"], aligned["outcome"], profile.bounds,
                                  n_boot=n_boot)
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
