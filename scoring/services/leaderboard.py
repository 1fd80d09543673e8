"""The leaderboard: judge runs ranked on a stated comparison set (scoring.ranking), ablation runs in
their own section, and warnings on runs whose images an SFT export trained on (cached)."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db.models import Count

from annotations.models import Image
from core.models import AuditEvent
from inference.models import Run, RunResult

from .. import queries, ranking
from ..models import ExportJob, ScoringProfile
from .cache import cached
from .comparison import predictions


def is_ablation(run: Run) -> bool:
    """Counterfactual runs (faces declared anonymized in the prompt, or really anonymized in the pixels)
    are ablations of another run's condition: shown in their own section, never ranked."""
    return bool(run.counterfactual_faces or run.face_variant)


DEFAULT_SPLIT = Image.SPLIT_TEST  # [decision] the paper's evaluation split (train is what SFT exports train on)
ALL_SPLITS = "all"


def comparison_images(profile: ScoringProfile, version=None, split: str = "", gt=None) -> list[int]:
    """The fixed comparison set: the ground-truth images of a dataset version and/or split ("all": every
    split), or of the test split when neither is named. It depends on the data only, never on the runs."""
    gt = gt or queries.ground_truth(profile)
    if version is None and not split:
        split = DEFAULT_SPLIT
    if version is None and split == ALL_SPLITS:
        return sorted(gt.score)
    images = Image.objects.all()
    if version is not None:
        images = images.filter(dataset_versions=version)
    if split and split != ALL_SPLITS:
        images = images.filter(split=split)
    return sorted(i for i in images.values_list("id", flat=True) if i in gt.score)


def leaderboard_ranking(runs: list[Run], profile: ScoringProfile, floor: float, *, version=None, split: str = "",
                        sort: str = "pearson", gt_print: str | None = None) -> dict:
    """The ranking of the non-ablation `runs` on the comparison set (cached; recomputed when a run, the
    ground truth, the floor, the set or the sort metric changes). `gt_print`: the profile's ground-truth
    fingerprint, where the caller has it."""
    runs = [r for r in runs if not is_ablation(r)]
    scope = {"version": None if version is None else {"id": version.pk, "name": version.name}, "split": split or None}
    origin = {"kind": "stated" if version is not None or split else "default_split", "split": split or DEFAULT_SPLIT, "run": None}
    if not runs:
        return {"floor": floor, "comparison_size": 0, "comparison_from": origin, "common_size": 0, "min_common": ranking.MIN_COMMON,
                "resamples": 0, "sort": sort, "ranked": {}, "unranked": {}, "scope": scope}
    gt_print = gt_print or queries.ground_truth_fingerprint(profile)
    prints = queries.run_fingerprints(runs)
    ids = sorted(r.pk for r in runs)
    members = None
    if version is not None:
        members = version.members.count(), version.pk
    fingerprint = queries.digest(gt_print, floor, sort, scope, members, [(i, prints[i]) for i in ids], ranking.RULES)
    key = f"leaderboard:{queries.digest(ids, scope, sort)}:profile:{profile.pk}"

    def compute():
        gt = queries.ground_truth(profile, gt_print)
        results = queries.judge_results(ids)
        chosen = comparison_images(profile, version, split, gt)
        data = ranking.comparison_ranking({rid: predictions(results[rid], gt) for rid in ids}, profile.bounds, floor,
                                          comparison=chosen, origin=origin, sort=sort)
        return {**data, "ranked": {str(k): v for k, v in data["ranked"].items()},
                "unranked": {str(k): v for k, v in data["unranked"].items()}, "scope": scope}

    return cached(key, fingerprint, compute, spec={"kind": "leaderboard", "run_ids": ids, "profile": profile.pk, "floor": floor,
                                                   "version": None if version is None else version.pk, "split": split, "sort": sort},
                  size=lambda: sum(r.total or 0 for r in runs))


def training_exports() -> list[dict]:
    """The splits SFT exports wrote as training data: finished export jobs and `export_sft` commands (audited)."""
    out = []
    for job_id, options in ExportJob.objects.filter(kind=ExportJob.KIND_SFT, status=ExportJob.STATUS_FINISHED).values_list("id", "options"):
        if options.get("split"):
            out.append({"label": f"SFT export #{job_id}", "split": options["split"]})
    jobs_root = Path(settings.CPRT_EXPORT_ROOT).resolve()
    for data in AuditEvent.objects.filter(action="export_sft").values_list("data", flat=True):
        folder = data.get("out_dir")
        if not data.get("training_split") or not folder or Path(folder).resolve().is_relative_to(jobs_root):
            continue  # an export job's own folder: listed above as the job
        out.append({"label": f"SFT export to {folder}", "split": data["training_split"]})
    return out


def training_overlap(runs: list[Run]) -> dict[int, dict]:
    """run id -> {"images", "exports"}: how many of the run's images lie in a split an SFT export trained on."""
    exports = training_exports()
    splits = sorted({e["split"] for e in exports})
    if not runs or not splits:
        return {}
    out: dict[int, dict] = {}
    for rid, split, n in (RunResult.objects.filter(run_id__in=[r.pk for r in runs], image__split__in=splits)
                          .values("run_id", "image__split").annotate(n=Count("id")).order_by()
                          .values_list("run_id", "image__split", "n")):
        entry = out.setdefault(rid, {"images": 0, "exports": set(), "splits": set()})
        entry["images"] += n
        entry["splits"].add(split)
        entry["exports"].update(e["label"] for e in exports if e["split"] == split)
    return {rid: {"images": e["images"], "exports": sorted(e["exports"]), "splits": sorted(e["splits"])} for rid, e in out.items()}


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    from annotations.datasets.models import DatasetVersion

    runs = list(Run.objects.filter(pk__in=spec["run_ids"]).defer(*queries.LARGE_RUN_FIELDS))
    if len(runs) != len(spec["run_ids"]):
        raise Run.DoesNotExist("a ranked run was deleted")
    version = DatasetVersion.objects.get(pk=spec["version"]) if spec.get("version") else None
    leaderboard_ranking(runs, ScoringProfile.objects.get(pk=spec["profile"]), spec["floor"], version=version,
                        split=spec.get("split") or "", sort=spec.get("sort") or "pearson")
