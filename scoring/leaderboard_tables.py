"""The leaderboard's tables (page and downloads from one source): ranked runs on the comparison set with
intervals and rank stability, runs listed below the floor, ablation runs, and the paper's rows."""
from __future__ import annotations

from django.urls import reverse

from .tables import METRIC_COLUMNS, RANK_COLUMNS, Link, Table, _run_cells, _sort_key, paper_reference


def comparison_text(ranking: dict) -> str:
    """What the comparison set is, in words."""
    scope = ranking.get("scope") or {}
    size = ranking["comparison_size"]
    if scope.get("version") or scope.get("split"):
        parts = []
        if scope.get("version"):
            parts.append(f"dataset version {scope['version']['name']}")
        if scope.get("split") == "all":
            parts.append("every split")
        elif scope.get("split"):
            parts.append(f"split {scope['split']}")
        return f"the {size:,} ground-truth images of {' and '.join(parts)}"
    default = (ranking.get("comparison_from") or {}).get("split") or "test"
    return (f"the {size:,} ground-truth images of the {default} split (the default, the paper's evaluation split; choose a "
            "dataset version or split to compare on another set; a filter or a small run never changes it)")


def unranked_reason(entry: dict, ranking: dict) -> str:
    """Why a run is listed, not ranked, in words."""
    sort_label = dict(RANK_COLUMNS).get(ranking["sort"], ranking["sort"])
    reason = entry.get("reason", "coverage")
    if reason == "common_set":
        return (f"the ranked runs have {ranking['common_size']:,} comparison images in common, fewer than the minimum of "
                f"{ranking.get('min_common', 0):,}: nothing is ranked")
    if reason == "undefined":
        return f"its {sort_label} is undefined on the common set, so it cannot be ordered"
    return f"covers less than {100 * ranking['floor']:g}% of the comparison set"


def page_meta(profile, ranking: dict, overlap: dict, **chosen) -> dict:
    """The download's `meta`: the profile that scored it, the comparison set and the choices of the page."""
    scope = ranking.get("scope") or {}
    return {"profile": profile.label, "profile_id": profile.pk, "profile_version": profile.version, **chosen,
            "comparison_set": comparison_text(ranking), "comparison_set_size": ranking["comparison_size"],
            "dataset_version": (scope.get("version") or {}).get("name"), "split": scope.get("split"),
            "common_set_size": ranking["common_size"], "resamples": ranking.get("resamples", 0),
            "training_overlap": {str(k): v for k, v in overlap.items()}}


def _warning(overlap: dict, rid: int) -> str:
    o = overlap.get(rid)
    if not o:
        return ""
    return (f"{o['images']:,} of its images are in split {', '.join(o['splits'])}, the training data of "
            f"{', '.join(o['exports'])}")


def _stability(s: dict | None) -> tuple:
    if not s or s.get("p_first") is None:
        return None, None
    return s["p_first"], f"{s['rank_lo']}–{s['rank_hi']} (median {s['median_rank']:g})"


def leaderboard(runs, reports: dict, ranking: dict, sort: str, overlap: dict | None = None, ablations=()) -> list[Table]:
    overlap = overlap or {}
    by_id = {r.pk: r for r in runs}
    ranked_rows = []
    for rid, entry in ranking["ranked"].items():
        run = by_id[int(rid)]
        p_first, rank_range = _stability(entry.get("rank_stability"))
        ranked_rows.append({**_run_cells(run), "coverage": entry["coverage"], "p_first": p_first, "rank_range": rank_range,
                            "warning": _warning(overlap, run.pk),
                            **{k: entry["metrics"].get(k) for k, _ in RANK_COLUMNS}})
    ranked_rows.sort(key=_sort_key(sort))
    top = ranked_rows[0]["run"] if ranked_rows else None
    for i, row in enumerate(ranked_rows, start=1):
        row["rank"] = i
        other = top if i > 1 else (ranked_rows[1]["run"] if len(ranked_rows) > 1 else None)
        row["compare"] = None if other is None else Link(
            f"vs {other.text}", reverse("scoring:compare") + f"?a={row['run'].text[1:]}&b={other.text[1:]}")
    floor = ranking["floor"]
    where = comparison_text(ranking)
    sort_label = dict(RANK_COLUMNS).get(sort, sort)
    ranked = Table(
        "leaderboard", f"Ranked runs: every metric on the {ranking['common_size']:,} images of the comparison set all of them answered",
        [("rank", "#"), ("run", "run"), ("model", "model"), ("stand_in", "stand-in"), ("provenance", "provenance"), ("strategy", "strategy"),
         ("prompt_version", "prompt version"),
         ("coverage", "coverage of the comparison set")] + RANK_COLUMNS
        + [("p_first", f"P(rank 1) by {sort_label}"), ("rank_range", "rank 95% range"), ("warning", "warning"), ("compare", "compare")],
        ranked_rows,
        note=f"Comparison set: {where}. Runs covering at least {100 * floor:g}% of it are ranked, on the {ranking['common_size']:,} "
             f"images every one of them answered (the common set); the others are listed below. Nothing is ranked when the common "
             f"set has fewer than {ranking.get('min_common', 0):,} images, and a run whose {sort_label} is undefined there is "
             "listed, not ranked. Intervals: percentile bootstrap 95% "
             f"over the common images ({ranking.get('resamples', 0)} resamples, the same for every run); the same resamples give "
             f"each run's rank distribution under {sort_label}. Pairwise accuracies count a tie in the prediction as ½; the 'tie "
             "share' is the share of pairs tied in the prediction and 'ties wrong' the accuracy when a tie counts as wrong.")
    unranked_rows = []
    for rid, entry in ranking["unranked"].items():
        run = by_id[int(rid)]
        r = reports.get(run.pk) or {}
        unranked_rows.append({**_run_cells(run), "coverage": entry["coverage"], "answered": entry["answered"],
                              "comparison_size": ranking["comparison_size"], "own_coverage": entry.get("own_coverage"),
                              "refusal_rate": r.get("refusal_rate"), "excluded_rate": r.get("excluded_rate"),
                              "reason": unranked_reason(entry, ranking),
                              "warning": _warning(overlap, run.pk)})
    not_ranked = Table(
        "not_ranked", "Listed, not ranked (coverage below the floor, common set too small, or sort metric undefined)",
        [("run", "run"), ("model", "model"), ("strategy", "strategy"), ("prompt_version", "prompt version"),
         ("coverage", "coverage of the comparison set"), ("answered", "comparison images answered"),
         ("comparison_size", "comparison set"), ("own_coverage", "coverage of its own images"), ("refusal_rate", "refused"),
         ("excluded_rate", "excluded"), ("reason", "why"), ("warning", "warning")],
        unranked_rows, note="Their metrics are on their own run page, over the images they answered; they are not comparable "
                            "with the ranked runs.")
    ablation_rows = []
    for run in ablations:
        r = reports.get(run.pk) or {}
        m = r.get("metrics") or {}
        ablation_rows.append({**_run_cells(run), "coverage": r.get("coverage"), "n_valid": r.get("n_valid"),
                              **{k: m.get(k) for k, _ in METRIC_COLUMNS}, "warning": _warning(overlap, run.pk)})
    ablation = Table(
        "ablations", "Ablation runs (counterfactual faces, pixel-anonymized faces): never ranked",
        [("run", "run"), ("model", "model"), ("strategy", "condition"), ("prompt_version", "prompt version"),
         ("coverage", "coverage of its own images"), ("n_valid", "valid")] + METRIC_COLUMNS + [("warning", "warning")],
        ablation_rows, note="An ablation changes the condition (the prompt declares faces anonymized, or the faces are removed "
                            "from the pixels): its figures are on its own images, with bootstrap 95% intervals, and it is "
                            "compared with its base run on the counterfactual pages, not ranked against real runs.")
    paper_rows = [{"model": p["model"], "strategy": p["strategy"], **{k: p.get(k) for k, _ in METRIC_COLUMNS}}
                  for p in paper_reference()["severity_metrics"]]
    paper = Table("paper", "The paper's published rows (its own data and curated pairs; never ranked with ours)",
                  [("model", "model"), ("strategy", "strategy")] + METRIC_COLUMNS, paper_rows)
    return [ranked, not_ranked, ablation, paper]
