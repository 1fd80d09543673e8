"""A run's figures and its predictions download, from its stored answers (`RunResult.raw["answer"]`)
and the images' VISPR labels; and the leaderboard of runs on one comparison set.

The predictions download is exactly what the figures are computed from: one line per (image, VISPR
attribute) of every image with a prediction, omitted attributes as probability 0 (marked omitted).
"""
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator

import numpy as np
from django.core.cache import cache

from inference.models import Run, RunResult

from . import attributes, metrics

CACHE_SECONDS = 3600


def run_attributes(run: Run) -> list[tuple[str, str]]:
    """The attributes the run asked about (frozen in its prompt at launch)."""
    return [(a, d) for a, d in run.prompt_text.get("attributes", [])]


def provenance(run: Run) -> str:
    """demo | stand-in | real (the same rule as the provenance tag)."""
    if (run.selection or {}).get("demo") or (run.request_params or {}).get("demo"):
        return "demo"
    return "stand-in" if run.stand_in else "real"


def answers(run: Run) -> list[tuple[int, str, dict]]:
    """(image id, VISPR id, parsed answer) of every ok result, by VISPR id."""
    rows = (RunResult.objects.filter(run=run, outcome=RunResult.OUTCOME_OK).order_by("image__vispr_id", "item_id")
            .values_list("image_id", "image__vispr_id", "raw__answer"))
    return [(pk, vid, answer) for pk, vid, answer in rows if isinstance(answer, dict)]


def arrays(run: Run) -> tuple[list[str], list[str], np.ndarray, np.ndarray, Counter]:
    """(attribute ids, VISPR ids, truth n x K, probabilities n x K, omissions per attribute) of the answered images."""
    ids = [a for a, _ in run_attributes(run)]
    rows = answers(run)
    truth = attributes.truth([pk for pk, _, _ in rows])
    y = np.zeros((len(rows), len(ids)), dtype=bool)
    p = np.zeros((len(rows), len(ids)), dtype=float)
    column = {a: j for j, a in enumerate(ids)}
    omitted: Counter = Counter()
    for i, (pk, _, answer) in enumerate(rows):
        present = truth.get(pk, set())
        for a, j in column.items():
            y[i, j] = a in present
        for a, value in (answer.get("p") or {}).items():
            if a in column:
                p[i, column[a]] = float(value)
        omitted.update(answer.get("omitted") or ())
    return ids, [vid for _, vid, _ in rows], y, p, omitted


def report(run: Run) -> dict:
    """Everything the figures page shows, JSON-able."""
    ids, vispr_ids, y, p, omitted_by = arrays(run)
    counts = Counter(dict(run.outcome_counts or {}))
    answered = len(vispr_ids)
    key = "vispr-attr-figures:" + hashlib.sha256(repr(ids).encode() + y.tobytes() + p.tobytes()).hexdigest()
    figures = cache.get(key)
    if figures is None:
        figures = metrics.figures(y, p, ids)
        cache.set(key, figures, CACHE_SECONDS)
    descriptions = dict(run_attributes(run))
    for row in figures["per_attribute"]:
        row["description"] = descriptions.get(row["attribute"], "")
        row["omitted"] = omitted_by.get(row["attribute"], 0)
    return {
        "run": run.pk, "kind": run.task, "status": run.status, "provenance": provenance(run),
        "provider": run.provider, "model": run.model_name, "prompt_version": run.prompt_version,
        "images": run.total, "answered": answered, "coverage": answered / run.total if run.total else None,
        "refused": counts.get(RunResult.OUTCOME_REFUSED, 0), "unparseable": counts.get(RunResult.OUTCOME_UNPARSEABLE, 0),
        "errors": counts.get(RunResult.OUTCOME_ERROR, 0), "attributes": len(ids), "omitted": sum(omitted_by.values()),
        **figures,
    }


def prediction_lines(run: Run) -> Iterator[dict]:
    """One line per (image VISPR id, attribute) of every answered image, in the run's attribute order."""
    ids = [a for a, _ in run_attributes(run)]
    for _, vispr_id, answer in answers(run):
        given = answer.get("p") or {}
        for a in ids:
            yield {"image": vispr_id, "attribute": a, "probability": float(given.get(a, 0.0)), "omitted": a not in given}


def comparison_sets(runs: list[Run]) -> list[dict]:
    """Runs grouped by their frozen item list (a leaderboard compares runs on one set only), largest group first."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        digest = hashlib.sha256(",".join(map(str, sorted(run.item_ids))).encode()).hexdigest()[:12]
        groups.setdefault(digest, []).append(run)
    sets = [{"key": k, "runs": v, "images": len(v[0].item_ids), "described": v[0].selection} for k, v in groups.items()]
    return sorted(sets, key=lambda s: (-len(s["runs"]), -s["images"], s["key"]))


def leaderboard(task: str, chosen: str = "") -> dict:
    """The finished runs of the chosen comparison set (default: the set most runs share), best cmAP first."""
    runs = list(Run.objects.filter(task=task, status=Run.STATUS_FINISHED).order_by("-created_at"))
    sets = comparison_sets(runs)
    current = next((s for s in sets if s["key"] == chosen), sets[0] if sets else None)
    rows = []
    for run in current["runs"] if current else []:
        figures = report(run)
        rows.append({"run": run, "figures": figures})
    rows.sort(key=lambda r: (r["figures"]["cmap"] is None, -(r["figures"]["cmap"] or 0)))
    return {"sets": sets, "current": current, "rows": rows}
