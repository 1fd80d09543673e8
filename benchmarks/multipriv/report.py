"""MultiPriv runs' results gathered for .metrics (the ORM side; the metrics are pure).

A run is scored against the truth frozen at its launch (`Run.truth`, .truth),
never against the records as a later import left them; `release_changes` says what differs now, and
`rescore_against_current` (an admin's confirmed POST, audited) replaces the frozen truth.
"""
from __future__ import annotations

from django.db import transaction

from core.audit import audit
from inference.benchmarks import Figure
from inference.models import Run, RunResult

from . import truth as frozen
from .metrics import PairAnswer, ProfileAnswer, profile_metrics, reid_metrics

REID, PROFILE = "multipriv-reid", "multipriv-profile"
KINDS = (REID, PROFILE)
# kind -> its leaderboard columns, in order (the declaration's `figures`; the pages' headline and labels).
FIGURES = {
    REID: (Figure("accuracy", "accuracy"), Figure("precision", "precision"), Figure("recall", "recall"), Figure("f1", "F1"),
           Figure("auc", "AUC"), Figure("refusal_rate", "refusal rate", higher_is_better=False)),
    PROFILE: (Figure("profile_share", "share of a profile recovered"), Figure("refusal_rate", "refusal rate", higher_is_better=False)),
}


class NothingToRescore(ValueError):
    """The run's frozen truth equals the current one."""


def runs():
    return Run.objects.filter(task__in=KINDS).order_by("-created_at", "-id")


def current_truth(run: Run) -> dict:
    """The truth of the run's items as the imported records say now (same form as `Run.truth`)."""
    items = {}
    ids = [int(i) for i in run.item_ids]
    for start in range(0, len(ids), 900):  # SQLite's bound-parameter limit
        chunk = ids[start:start + 900]
        items.update(frozen.profile_items(chunk) if run.task == PROFILE else frozen.pair_items(chunk))
    return {"items": items}


def run_truth(run: Run) -> dict:
    """The truth the run is scored against: its frozen snapshot (every launch and the migration write
    one); a run stored without one (made outside launch) is scored against the current records."""
    return run.truth if run.truth.get("items") is not None else current_truth(run)


def release_changes(run: Run) -> list[str]:
    """What differs between the run's frozen truth and the imported records now ([] when nothing)."""
    if run.truth.get("items") is None:
        return []
    return frozen.changes(run.truth, current_truth(run), run.task)


@transaction.atomic
def rescore_against_current(run: Run, user) -> dict:
    """Replace the run's frozen truth with the current one (audited: old and new fingerprints, the
    changes). The run's row is locked, so two confirmations sent at once rescore once."""
    run = Run.objects.select_for_update().get(pk=run.pk)
    lines = release_changes(run)
    if not lines:
        raise NothingToRescore("The imported data has not changed since this run's truth was frozen: nothing to rescore.")
    new = frozen.snapshot(current_truth(run)["items"], "rescore")
    audit(user, "multipriv.rescore", run, old=frozen.fingerprint(run.truth), new=frozen.fingerprint(new),
          old_frozen_at=run.truth.get("frozen_at"), old_source=run.truth.get("source"), changes=lines[:50], changed=len(lines))
    run.truth = new
    run.save(update_fields=["truth"])
    return {"changed": len(lines), "fingerprint": frozen.fingerprint(new)}


def _said(result: RunResult):
    """The answer's meaning for the metrics: None when refused, unreadable or declined."""
    answer = result.raw.get("answer") if result.outcome == RunResult.OUTCOME_OK else None
    return None if not answer or answer.get("declined") else answer


def _results(run: Run) -> dict[int, RunResult]:
    return {r.item_id: r for r in run.results.all()}


def reid_answers(run: Run) -> tuple[list[PairAnswer], list[dict]]:
    results, items = _results(run), run_truth(run)["items"]
    answers, rows = [], []
    for key in sorted((k for k in items if int(k) in results), key=int):
        pair, result = {"pk": int(key), **items[key]}, results[int(key)]
        said = _said(result)
        answer = None if said is None else bool(said["same_person"])
        answers.append(PairAnswer(pair["same_person"], answer, result.score if answer is not None else None))
        rows.append({"pair": pair, "result": result, "answer": answer, "correct": answer is not None and answer == pair["same_person"]})
    return answers, rows


def profile_answers(run: Run) -> tuple[list[ProfileAnswer], list[dict]]:
    results, items = _results(run), run_truth(run)["items"]
    answers, rows = [], []
    for key in sorted((k for k in items if int(k) in results), key=int):
        entry, result = items[key], results[int(key)]
        said = _said(result)
        given = None if said is None else said.get("profile") or {}
        answers.append(ProfileAnswer(entry["person"], entry["profile"], given))
        rows.append({"person": {"pk": int(key), "name": entry["person"]}, "result": result, "answer": given})
    return answers, rows


def report(run: Run) -> dict:
    """The run's metrics, with its coverage (items answered in any way / items of the run) and the
    truth it is scored against (when it was frozen, by what, its fingerprint)."""
    coverage = {"items": run.total, "with_result": run.results.count()}
    used = run_truth(run)
    about = {"frozen": run.truth.get("items") is not None, "frozen_at": used.get("frozen_at"), "source": used.get("source"),
             "fingerprint": frozen.fingerprint(used)}
    if run.task == REID:
        answers, rows = reid_answers(run)
        return {"kind": REID, "coverage": coverage, "truth": about, "metrics": reid_metrics(answers), "rows": rows}
    answers, rows = profile_answers(run)
    return {"kind": PROFILE, "coverage": coverage, "truth": about, "metrics": profile_metrics(answers), "rows": rows}


def plain(report: dict) -> dict:
    """A report's JSON-able part (no result rows; per-person figures left out)."""
    return {"kind": report["kind"], "coverage": report["coverage"], "truth": report["truth"],
            "metrics": {k: v for k, v in report["metrics"].items() if k != "per_person"}}


def figures_json(run: Run) -> dict:
    """The run's figures as its page's `?format=json` answers them (and the declaration's `report`)."""
    rep = report(run)
    out = plain(rep)
    if run.task == PROFILE:
        out["metrics"]["per_person"] = rep["metrics"]["per_person"]
    return {"run": run.pk, "task": run.task, "model": run.model_name, **out, "release_changes": release_changes(run)}
