"""Paired comparison of two judge runs on the images both answered (cached)."""
from __future__ import annotations

import numpy as np

from inference.models import Run

from .. import paired, queries, ranking
from ..models import ScoringProfile
from .cache import cached


def predictions(results: dict, gt: "queries.GroundTruth") -> "ranking.RunPredictions":
    aligned = queries.align(results, gt)
    valid = (aligned["outcome"] == "ok") & np.isfinite(aligned["pred"])
    return ranking.RunPredictions(aligned["image_id"], aligned["gt"], aligned["gt_level"], aligned["pred"], valid)



def compare_runs(run_a: Run, run_b: Run, profile: ScoringProfile) -> dict:
    """Paired comparison of two judge runs on the images both answered (cached)."""
    gt_print = queries.ground_truth_fingerprint(profile)
    prints = queries.run_fingerprints([run_a, run_b])
    fingerprint = queries.digest(gt_print, prints[run_a.pk], prints[run_b.pk])

    def compute():
        gt = queries.ground_truth(profile, gt_print)
        results = queries.judge_results([run_a.pk, run_b.pk])
        a, b = predictions(results[run_a.pk], gt), predictions(results[run_b.pk], gt)
        common = np.intersect1d(a.image_id[a.valid], b.image_id[b.valid])
        ka, kb = np.isin(a.image_id, common) & a.valid, np.isin(b.image_id, common) & b.valid
        oa, ob = np.argsort(a.image_id[ka]), np.argsort(b.image_id[kb])
        data = paired.paired_comparison(a.gt[ka][oa], a.gt_level[ka][oa], a.pred[ka][oa], b.pred[kb][ob], profile.bounds)
        data["coverage"] = {"a": a.coverage, "b": b.coverage}
        return data

    return cached(f"paired:{run_a.pk}:{run_b.pk}:profile:{profile.pk}", fingerprint, compute,
                  spec={"kind": "paired", "a": run_a.pk, "b": run_b.pk, "profile": profile.pk},
                  size=lambda: (run_a.total or 0) + (run_b.total or 0))


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    compare_runs(Run.objects.get(pk=spec["a"]), Run.objects.get(pk=spec["b"]), ScoringProfile.objects.get(pk=spec["profile"]))
