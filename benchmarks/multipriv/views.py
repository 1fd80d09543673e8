"""MultiPriv individual-level pages (admins: they show the persons' images): the leaderboard of runs of
both kinds, and one run's figures (re-identification or profile reconstruction), each as HTML or JSON,
scored against the truth frozen at the run's launch; when the imported data changed since, the run's
page says so and offers a rescore against the current data (a confirmed POST, audited)."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.roles import ROLE_ADMIN, require_role
from scoring.access import get_run_for_review

from . import report as service
from .fields import categories

HEADLINE = {kind: tuple(f.key for f in figures if f.headline) for kind, figures in service.FIGURES.items()}
LABELS = {f.key: f.label for figures in service.FIGURES.values() for f in figures}
_plain = service.plain


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
    return render(request, "multipriv/leaderboard.html", {"sections": sections})


def _multipriv_run(user, run_id: int):
    run = get_run_for_review(user, run_id)
    if run.task not in service.KINDS:
        raise Http404("Not a MultiPriv run.")
    return run


class RescoreForm(forms.Form):
    confirm = forms.BooleanField(required=True, error_messages={
        "required": "Tick the confirmation to score this run against the current imported data (its figures will change)."})


def _run_page(request, run, form: RescoreForm | None = None, status: int = 200):
    rep = service.report(run)
    changes = service.release_changes(run)
    failures = [r for r in rep["rows"] if not r.get("correct", True)][:24] if run.task == service.REID else []
    return render(request, "multipriv/run.html", {"run": run, "report": rep, "failures": failures,
                                                  "categories": categories(), "changes": changes,
                                                  "rescore_form": form or RescoreForm(),
                                                  "metric_rows": [(LABELS.get(k, k), v) for k, v in rep["metrics"]["metrics"].items()]},
                  status=status)


@require_role(ROLE_ADMIN)
@require_GET
def run_detail(request, run_id: int):
    run = _multipriv_run(request.user, run_id)
    if request.GET.get("format") != "json":
        return _run_page(request, run)
    return JsonResponse(service.figures_json(run))


@require_role(ROLE_ADMIN)
@require_POST
def rescore(request, run_id: int):
    """Score the run against the current imported data: the admin confirms; audited. Without the
    confirmation, or when the data did not change, the page answers 400 with the reason; nothing changes."""
    run = _multipriv_run(request.user, run_id)
    form = RescoreForm(request.POST)
    if form.is_valid():
        try:
            done = service.rescore_against_current(run, request.user)
        except service.NothingToRescore as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Run #{run.pk} is now scored against the current imported data "
                                      f"({done['changed']} item(s) changed).")
            return redirect("multipriv:run", run.pk)
    return _run_page(request, run, form, status=400)
