"""MultiPriv individual-level pages (admins: they show the persons' images): the leaderboard of runs of
both kinds, and one run's figures (re-identification or profile reconstruction), each as HTML or JSON."""
from __future__ import annotations

from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotations.multipriv.fields import categories
from core.roles import ROLE_ADMIN, require_role

from .access import get_run_for_review
from .services import multipriv as service

HEADLINE = {service.REID: ("accuracy", "precision", "recall", "f1", "auc", "refusal_rate"),
            service.PROFILE: ("profile_share", "refusal_rate")}

LABELS = {"accuracy": "accuracy", "precision": "precision", "recall": "recall", "f1": "F1", "auc": "AUC",
          "refusal_rate": "refusal rate", "profile_share": "share of a profile recovered"}


def _plain(report: dict) -> dict:
    return {"kind": report["kind"], "coverage": report["coverage"],
            "metrics": {k: v for k, v in report["metrics"].items() if k != "per_person"}}


@require_role(ROLE_ADMIN)
@require_GET
def leaderboard(request):
    rows = []
    for run in service.runs():
        rep = service.report(run)
        rows.append({"run": run, "report": rep, "headline": [(LABELS[m], rep["metrics"]["metrics"].get(m)) for m in HEADLINE[run.task]]})
    if request.GET.get("format") == "json":
        return JsonResponse({"runs": [{"run": r["run"].pk, "task": r["run"].task, "provider": r["run"].provider,
                                       "model": r["run"].model_name, "status": r["run"].status, **_plain(r["report"])} for r in rows]})
    sections = [(kind, label, [LABELS[m] for m in HEADLINE[kind]], [r for r in rows if r["run"].task == kind]) for kind, label in (
        (service.REID, "Re-identification: do two images belong to the same person?"),
        (service.PROFILE, "Profile reconstruction: how much of a person's profile does the model rebuild?"))]
    return render(request, "scoring/multipriv/leaderboard.html", {"sections": sections})


@require_role(ROLE_ADMIN)
@require_GET
def run_detail(request, run_id: int):
    run = get_run_for_review(request.user, run_id)
    if run.task not in service.KINDS:
        raise Http404("Not a MultiPriv run.")
    rep = service.report(run)
    if request.GET.get("format") == "json":
        out = _plain(rep)
        if run.task == service.PROFILE:
            out["metrics"]["per_person"] = rep["metrics"]["per_person"]
        return JsonResponse({"run": run.pk, "task": run.task, "model": run.model_name, **out})
    failures = [r for r in rep["rows"] if not r.get("correct", True)][:24] if run.task == service.REID else []
    return render(request, "scoring/multipriv/run.html", {"run": run, "report": rep, "failures": failures,
                                                          "categories": categories(),
                                                          "metric_rows": [(LABELS.get(k, k), v) for k, v in rep["metrics"]["metrics"].items()]})
