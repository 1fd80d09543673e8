"""What the SPY-Bench pages show: a run's (or an import's) metrics with intervals, its per-label and
per-scenario tables and its failure examples, computed from its evaluated rows (cached per run state)."""
from __future__ import annotations

from django.core.cache import cache

from inference.models import Run

from . import metrics
from .importing import run_rows
from .models import SpyImport
from .upstream import ABS_PRIV_LABELS

COLUMNS = [  # (metrics key, short heading)
    ("accuracy", "Acc"), ("absolute privacy accuracy", "Abs acc"), ("ics w/o scenario", "ICS"),
    ("absolute privacy ics w/o scenario", "Abs ICS"), ("rta w/ non-conflict scenario", "RTA"),
    ("ata w/ non-conflict scenario", "ATA"), ("ics w/ non-conflict scenario", "ICS scen."),
    ("ata w/ conflict scenario", "ATA conflict"), ("hms", "HMS"),
]
EXAMPLES = 10


def run_report(run: Run) -> tuple[list[dict], dict]:
    """(evaluated rows, report) of a spy-bench run; the report is cached until the run's results change."""
    rows = run_rows(run)
    key = f"spy-report:{run.pk}:{run.done}:{run.status}:{len(rows)}"
    report = cache.get(key)
    if report is None:
        report = metrics.report(rows) if rows else None
        cache.set(key, report, 3600)
    return rows, report


def cells(report: dict | None) -> list[str]:
    """The leaderboard's cells: score and its 95% interval per column."""
    if not report:
        return ["—"] * len(COLUMNS)
    out = []
    for key, _ in COLUMNS:
        value = report["metrics"][key] if key == "hms" else report["metrics"][key]["score"]
        interval = report["intervals"].get(key)
        if value == metrics.NA:
            out.append("N/A")
        elif interval == metrics.NA or interval is None:
            out.append(f"{value:.1f}")
        else:
            out.append(f"{value:.1f} [{interval[0]:.1f}, {interval[1]:.1f}]")
    return out


def table(groups: dict, group_intervals: dict) -> list[tuple[str, list[str], int, int]]:
    """Per-label or per-scenario rows: (name, scores with their intervals, rows, exceptions)."""
    return [(name, cells({"metrics": m, "intervals": group_intervals.get(name, {})}), m["total"], m["exception"])
            for name, m in groups.items()]


def ics_note(report: dict | None) -> str:
    if not report:
        return ""
    m = report["metrics"]
    parts = []
    for key, name in (("ics w/o scenario", "without scenario"), ("ics w/ non-conflict scenario", "in privacy scenarios")):
        g = m[key]
        parts.append(f"ICS pairs {name}: n1 {g['n1']}, n2 {g['n2']}, n3 {g['n3']}, n4 {g['n4']}")
    return "; ".join(parts) + "."


def failures(rows: list[dict]) -> dict[str, list[dict]]:
    """Examples of the two ways to fail the user: answered although they asked for privacy; refused
    although they allowed it (not for an absolutely private label, where refusing is expected)."""
    answered = [r for r in rows if r["is_privacy"] == 1 and r.get("eval_resp") == "respond"
                and (r.get("scenario") or {}).get("is_privacy", 1) == 1]
    refused = [r for r in rows if r["is_privacy"] == 0 and r.get("eval_resp") == "reject" and r["label"] not in ABS_PRIV_LABELS]
    return {"answered": answered[:EXAMPLES], "refused": refused[:EXAMPLES],
            "answered_count": len(answered), "refused_count": len(refused)}


def leaderboard() -> list[dict]:
    entries = []
    for run in Run.objects.filter(task="spy-bench").order_by("-created_at")[:200]:
        _, report = run_report(run)
        entries.append({"run": run, "imported": None, "model": run.model_name, "provider": run.provider,
                        "judge": run.options.get("judge_model") or run.model_name, "distractors": bool(run.options.get("distractors")),
                        "cells": cells(report), "total": report["metrics"]["total"] if report else 0,
                        "exceptions": report["metrics"]["exception"] if report else 0})
    for imported in SpyImport.objects.order_by("-created_at")[:200]:
        report = imported.report
        entries.append({"run": None, "imported": imported, "model": imported.model_name, "provider": "imported",
                        "judge": imported.judge_model or "—", "distractors": imported.distractors, "cells": cells(report),
                        "total": report["metrics"]["total"], "exceptions": report["metrics"]["exception"]})
    return entries
