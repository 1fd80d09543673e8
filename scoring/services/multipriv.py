"""MultiPriv runs' results gathered for scoring.multipriv (the ORM side; the metrics are pure)."""
from __future__ import annotations

from annotations.multipriv.models import Person, PersonPair
from inference.models import Run, RunResult

from ..multipriv import PairAnswer, ProfileAnswer, profile_metrics, reid_metrics

REID, PROFILE = "multipriv-reid", "multipriv-profile"
KINDS = (REID, PROFILE)


def runs():
    return Run.objects.filter(task__in=KINDS).order_by("-created_at", "-id")


def _said(result: RunResult):
    """The answer's meaning for the metrics: None when refused, unreadable or declined."""
    answer = result.raw.get("answer") if result.outcome == RunResult.OUTCOME_OK else None
    return None if not answer or answer.get("declined") else answer


def reid_answers(run: Run) -> tuple[list[PairAnswer], list[dict]]:
    results = {r.item_id: r for r in run.results.all()}
    pairs = PersonPair.objects.filter(pk__in=list(results)).select_related("first__person", "second__person").order_by("pk")
    answers, rows = [], []
    for pair in pairs:
        result = results[pair.pk]
        said = _said(result)
        answer = None if said is None else bool(said["same_person"])
        answers.append(PairAnswer(pair.same_person, answer, result.score if answer is not None else None))
        rows.append({"pair": pair, "result": result, "answer": answer, "correct": answer is not None and answer == pair.same_person})
    return answers, rows


def profile_answers(run: Run) -> tuple[list[ProfileAnswer], list[dict]]:
    results = {r.item_id: r for r in run.results.all()}
    answers, rows = [], []
    for person in Person.objects.filter(pk__in=list(results)).order_by("pk"):
        said = _said(results[person.pk])
        answers.append(ProfileAnswer(person.name, person.present_fields(), None if said is None else said.get("profile") or {}))
        rows.append({"person": person, "result": results[person.pk], "answer": None if said is None else said.get("profile") or {}})
    return answers, rows


def report(run: Run) -> dict:
    """The run's metrics, with its coverage (items answered in any way / items of the run)."""
    coverage = {"items": run.total, "with_result": run.results.count()}
    if run.task == REID:
        answers, rows = reid_answers(run)
        return {"kind": REID, "coverage": coverage, "metrics": reid_metrics(answers), "rows": rows}
    answers, rows = profile_answers(run)
    return {"kind": PROFILE, "coverage": coverage, "metrics": profile_metrics(answers), "rows": rows}
