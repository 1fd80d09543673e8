"""The judge-run page's page-sized data (issue 29): the scatter sample, the per-level histograms of the
predicted scores and the most under- and over-estimated images.

They are computed once from every result and ground truth, and stored under the run metrics' exact key
(the run's state and the ground truth's integer fingerprint), so a page view reads a few thousand
points, not every result. The page's downloads still read every prediction (they list them all).
"""
from __future__ import annotations

import numpy as np

from inference.models import Run

from .. import queries
from ..metrics import histogram, predicted_levels, prediction_row
from ..models import ScoringProfile
from .cache import cached
from .run_metrics import run_points

SCATTER_POINTS = 2500
EXTREMES = 10


def page_key(run_id: int, profile: ScoringProfile) -> str:
    return f"run-page:{run_id}:profile:{profile.pk}"


def run_page_data(run: Run, profile: ScoringProfile, gt_print: str | None = None) -> dict:
    """The cached page-sized data of a judge run under a profile (see the module's docstring); `gt_print`: the
    profile's ground-truth fingerprint, where the caller has it."""
    fingerprint = queries.digest(queries.run_fingerprints([run])[run.pk], gt_print or queries.ground_truth_fingerprint(profile))
    return cached(page_key(run.pk, profile), fingerprint, lambda: page_data(run_points(run, profile), profile.bounds),
                  spec={"kind": "run_page", "run_id": run.pk, "profile": profile.pk}, size=lambda: run.total or 0)


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    run_page_data(Run.objects.get(pk=spec["run_id"]), ScoringProfile.objects.get(pk=spec["profile"]))


def page_data(points: dict, bounds) -> dict:
    """From a run's aligned points (scoring.queries.align): a fixed, seeded sample of the valid (ground truth,
    prediction, level) triples, 20-bin histograms of the predictions per ground-truth level, and the candidates
    for the extremes table: the EXTREMES most negative and most positive errors (ties by image order, as
    scoring.tables.extremes_table picks them from every row), in image order."""
    valid = (points["outcome"] == "ok") & np.isfinite(points["pred"])
    gt, pred, lv = points["gt"][valid], points["pred"][valid], points["gt_level"][valid]
    shown = np.arange(gt.size)
    if gt.size > SCATTER_POINTS:  # a fixed, seeded sample keeps the page small
        shown = np.sort(np.random.default_rng(0).choice(gt.size, SCATTER_POINTS, replace=False))
    per_level = {str(level): histogram(pred[lv == level], bins=20) for level in (1, 2, 3, 4)}
    error = np.where(valid, np.nan_to_num(points["pred"]) - points["gt"], 0.0)
    under = np.flatnonzero(valid & (error < 0))
    over = np.flatnonzero(valid & (error > 0))
    chosen = np.concatenate([under[np.argsort(error[under], kind="stable")[:EXTREMES]],
                             over[np.argsort(-error[over], kind="stable")[:EXTREMES]]])
    chosen = np.unique(chosen)
    levels = predicted_levels(np.nan_to_num(points["pred"][chosen]), bounds)
    return {"scatter": [[float(gt[i]), float(pred[i]), int(lv[i])] for i in shown], "valid": int(gt.size),
            "histograms": per_level, "extremes": [prediction_row(points, int(i), levels[k]) for k, i in enumerate(chosen)]}
