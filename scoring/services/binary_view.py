"""The binary private/public view of runs: local-classifier (binary) runs beside VLM judge runs.

One report per run, profile and level threshold, cached on the run's and the ground truth's
fingerprints. Binary runs are never ranked and never enter the leaderboard (which reads judge runs
only); this view lists runs side by side, classifiers first, in id order.
"""
from __future__ import annotations

import numpy as np

from inference.models import Run

from .. import binary, queries
from ..metrics import THRESHOLDS, predicted_levels
from ..models import ScoringProfile
from .cache import cached

TASK_BINARY = "binary"


def finished_runs(task: str) -> list[Run]:
    return list(Run.objects.filter(task=task, status=Run.STATUS_FINISHED).defer(*queries.LARGE_RUN_FIELDS).order_by("id"))


def decisions(run: Run, aligned: dict, profile: ScoringProfile, threshold: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(valid mask, the run's private decisions, its ranking score) on the aligned images."""
    valid = (aligned["outcome"] == "ok") & np.isfinite(aligned["pred"])
    pred = np.nan_to_num(aligned["pred"])
    if run.task == TASK_BINARY:
        return valid, binary.classifier_decisions(pred), pred
    return valid, predicted_levels(pred, profile.bounds) <= threshold, pred


def compute(run: Run, results: dict, gt: "queries.GroundTruth", profile: ScoringProfile, threshold: int) -> dict:
    aligned = queries.align(results, gt)
    valid, guess, score = decisions(run, aligned, profile, threshold)
    truth = aligned["gt_level"] <= threshold
    report = binary.evaluate(truth[valid], guess[valid], score[valid])
    report.update({
        "run": run.pk, "task": run.task, "threshold": threshold, "private_levels": list(range(1, threshold + 1)),
        "n_results": int(aligned["outcome"].size), "excluded": int((~valid).sum()), "without_ground_truth": aligned["without_gt"],
        "decision": (f"P(private) >= {binary.P_THRESHOLD}" if run.task == TASK_BINARY
                     else f"predicted level 1–{threshold} (score under the profile's boundaries)"),
    })
    return report


def binary_reports(runs: list[Run], profile: ScoringProfile, threshold: int) -> dict[int, dict]:
    """run id -> its binary report (cached; computed together when stale)."""
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold must be one of {THRESHOLDS}")
    if not runs:
        return {}
    gt_print = queries.ground_truth_fingerprint(profile)
    prints = queries.run_fingerprints(runs)
    out, state = {}, {}

    def load():
        if not state:
            state["gt"] = queries.ground_truth(profile, gt_print)
            state["results"] = queries.judge_results([r.pk for r in runs])
        return state

    for run in runs:
        key = f"binary-view:{run.pk}:profile:{profile.pk}:t{threshold}"
        out[run.pk] = cached(key, queries.digest(prints[run.pk], gt_print, binary.P_THRESHOLD, binary.N_BOOT),
                             lambda run=run: compute(run, load()["results"][run.pk], load()["gt"], profile, threshold),
                             spec={"kind": "binary_view", "run_id": run.pk, "profile": profile.pk, "threshold": threshold},
                             size=lambda run=run: run.total or 0)
    return out


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    binary_reports([Run.objects.get(pk=spec["run_id"])], ScoringProfile.objects.get(pk=spec["profile"]), spec["threshold"])


def binary_points(run: Run, profile: ScoringProfile) -> dict:
    """The run's aligned per-image values (for the classifier page's histogram)."""
    gt = queries.ground_truth(profile)
    return queries.align(queries.judge_results([run.pk])[run.pk], gt)
