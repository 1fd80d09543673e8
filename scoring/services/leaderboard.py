"""The like-for-like leaderboard: judge runs ranked on the images every ranked run answered (cached)."""
from __future__ import annotations

from inference.models import Run

from .. import queries, ranking
from ..models import ScoringProfile
from .cache import cached
from .comparison import predictions

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
        data = ranking.common_set_ranking({rid: predictions(results[rid], gt) for rid in ids}, profile.bounds, floor)
        return {**data, "ranked": {str(k): v for k, v in data["ranked"].items()},
                "unranked": {str(k): v for k, v in data["unranked"].items()}}

    return cached(key, fingerprint, compute, spec={"kind": "leaderboard", "run_ids": ids, "profile": profile.pk, "floor": floor})


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    runs = list(Run.objects.filter(pk__in=spec["run_ids"]).defer("image_ids", "prompt_text", "selection"))
    if len(runs) != len(spec["run_ids"]):
        raise Run.DoesNotExist("a ranked run was deleted")
    leaderboard_ranking(runs, ScoringProfile.objects.get(pk=spec["profile"]), spec["floor"])
