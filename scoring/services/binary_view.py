"""The binary private/public view of runs that give each image a score: CPRT's judge runs (a severity
score, private when its predicted level is at or below the threshold) and, for a caller that says so,
runs whose score is P(private) (private when it is at least `p_private_at`; the local-classifier
benchmark, benchmarks/classifiers/, asks for its runs this way). The service never asks what a run's
kind is: the caller names the decision rule, and it is part of the cache key and of the refresh spec.

One report per run, profile, level threshold and decision rule, cached on the run's and the ground
truth's fingerprints. No run of this view is ranked, and none enters the severity leaderboard (which
reads judge runs only); the pages list runs side by side, in id order.
"""
from __future__ import annotations

import numpy as np

from inference.models import Run

from .. import binary, queries
from ..metrics import THRESHOLDS, predicted_levels
from ..models import ScoringProfile
from .cache import cached


def finished_runs(task: str) -> list[Run]:
    return list(Run.objects.filter(task=task, status=Run.STATUS_FINISHED).defer(*queries.LARGE_RUN_FIELDS).order_by("id"))


def decisions(aligned: dict, profile: ScoringProfile, threshold: int, p_private_at: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(valid mask, the run's private decisions, its ranking score) on the aligned images: a severity
    score decides by its predicted level; a P(private) score (`p_private_at` given) by that cut."""
    valid = (aligned["outcome"] == "ok") & np.isfinite(aligned["pred"])
    pred = np.nan_to_num(aligned["pred"])
    if p_private_at is not None:
        return valid, pred >= p_private_at, pred
    return valid, predicted_levels(pred, profile.bounds) <= threshold, pred


def compute(run: Run, results: dict, gt: "queries.GroundTruth", profile: ScoringProfile, threshold: int,
            p_private_at: float | None = None) -> dict:
    aligned = queries.align(results, gt)
    valid, guess, score = decisions(aligned, profile, threshold, p_private_at)
    truth = aligned["gt_level"] <= threshold
    report = binary.evaluate(truth[valid], guess[valid], score[valid])
    report.update({
        "run": run.pk, "task": run.task, "threshold": threshold, "private_levels": list(range(1, threshold + 1)),
        "n_results": int(aligned["outcome"].size), "excluded": int((~valid).sum()), "without_ground_truth": aligned["without_gt"],
        "decision": (f"P(private) >= {p_private_at}" if p_private_at is not None
                     else f"predicted level 1–{threshold} (score under the profile's boundaries)"),
    })
    return report


def binary_reports(runs: list[Run], profile: ScoringProfile, threshold: int, p_private_at: float | None = None) -> dict[int, dict]:
    """run id -> its binary report (cached; computed together when stale). `p_private_at`: the runs'
    scores are P(private), private from this value on (None: severity scores, decided by level)."""
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold must be one of {THRESHOLDS}")
    if not runs:
        return {}
    gt_print = queries.ground_truth_fingerprint(profile)
    prints = queries.run_fingerprints(runs)
    out, state = {}, {}
    rule = "" if p_private_at is None else f":p{p_private_at}"

    def load():
        if not state:
            state["gt"] = queries.ground_truth(profile, gt_print)
            state["results"] = queries.judge_results([r.pk for r in runs])
        return state

    for run in runs:
        key = f"binary-view:{run.pk}:profile:{profile.pk}:t{threshold}{rule}"
        out[run.pk] = cached(key, queries.digest(prints[run.pk], gt_print, p_private_at, binary.N_BOOT),
                             lambda run=run: compute(run, load()["results"][run.pk], load()["gt"], profile, threshold, p_private_at),
                             spec={"kind": "binary_view", "run_id": run.pk, "profile": profile.pk, "threshold": threshold,
                                   "p_private_at": p_private_at},
                             size=lambda run=run: run.total or 0)
    return out


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    binary_reports([Run.objects.get(pk=spec["run_id"])], ScoringProfile.objects.get(pk=spec["profile"]), spec["threshold"],
                   spec.get("p_private_at"))


def binary_points(run: Run, profile: ScoringProfile) -> dict:
    """The run's aligned per-image values (for a run's histogram of its scores per ground-truth level)."""
    gt = queries.ground_truth(profile)
    return queries.align(queries.judge_results([run.pk])[run.pk], gt)
