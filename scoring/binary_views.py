"""The binary private/public pages: local-classifier runs beside VLM judge runs (never ranked), and a
classifier run's own metrics page (a binary run's /scoring/runs/<id>/ sends it here)."""
from __future__ import annotations

import numpy as np
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from core.roles import STAFF_ROLES, require_role

from . import binary, svg
from .access import get_run_for_review
from .forms import BinaryViewForm
from .metrics import histogram
from .models import ScoringProfile
from .services.binary_view import TASK_BINARY, binary_points, binary_reports, finished_runs
from .tables import Link, Table
from .views import _bad_request, _respond


def _rows(runs, reports) -> list[dict]:
    rows = []
    for run in runs:
        r = reports[run.pk]
        row = {"run": Link(f"#{run.pk}", reverse("scoring:binary_run", args=[run.pk]) if run.task == TASK_BINARY
                          else reverse("scoring:run", args=[run.pk])),
               "model": f"{run.provider}/{run.model_name}" + (f" · {run.strategy}" if run.strategy else ""), "provenance": run.provenance,
               "n": r["n"], "private_public": f"{r['support_private']} / {r['support_public']}", "decision": r["decision"]}
        row.update({name: r["metrics"][name] for name in binary.METRICS})
        rows.append(row)
    return rows


def _columns() -> list[tuple[str, str]]:
    return ([("run", "run"), ("model", "model"), ("provenance", "provenance"), ("n", "images"), ("private_public", "private / public")]
            + [(name, binary.LABELS[name] + " [95% CI]") for name in binary.METRICS] + [("decision", "private when")])


def _form(request) -> BinaryViewForm:
    """The threshold form, bound with the default threshold when none is asked for, so that its box
    shows the threshold in force (a bound form shows only what was sent)."""
    data = request.GET.copy()
    if not data.get("threshold"):
        data["threshold"] = str(BinaryViewForm.DEFAULT_THRESHOLD)
    return BinaryViewForm(data)


@require_role(*STAFF_ROLES)
@require_GET
def binary_view(request):
    form = _form(request)
    if not form.is_valid():
        return _bad_request(request, form)
    threshold = form.cleaned_data["threshold"]
    profile = ScoringProfile.active()
    classifiers, judges = finished_runs(TASK_BINARY), finished_runs("judge")
    reports = binary_reports(classifiers + judges, profile, threshold)
    note = (f"Private = ground-truth levels 1–{threshold}. Listed side by side, not ranked: binary runs never enter the "
            "severity leaderboard. AUC ranks images by P(private) (classifiers) or by the predicted score (judges).")
    tables = [Table("classifiers", "Local classifiers (binary runs)", _columns(), _rows(classifiers, reports), note),
              Table("judges", "VLM judge runs, binary view of their severity", _columns(), _rows(judges, reports), note)]
    context = {"form": form, "profile": profile, "threshold": threshold, "p_threshold": binary.P_THRESHOLD}
    meta = {"profile": profile.label, "threshold": threshold}
    return _respond(request, form, "binary-view", "scoring/binary_view.html", context, tables, meta)


@require_role(*STAFF_ROLES)
@require_GET
def binary_run(request, run_id: int):
    run = get_run_for_review(request.user, run_id)
    if run.task != TASK_BINARY:
        if run.task == "judge":
            return redirect("scoring:run", run.pk)
        raise Http404("Not a binary run.")
    form = _form(request)
    if not form.is_valid():
        return _bad_request(request, form)
    threshold = form.cleaned_data["threshold"]
    profile = ScoringProfile.active()
    report = binary_reports([run], profile, threshold)[run.pk]
    rows = [{"metric": binary.LABELS[name], "estimate": report["metrics"][name]} for name in binary.METRICS]
    rows.append({"metric": "images private / public (ground truth)", "estimate": f"{report['support_private']} / {report['support_public']}"})
    c = report["confusion"]
    tables = [
        Table("binary", f"Binary view: levels 1–{threshold} private, P(private) ≥ {binary.P_THRESHOLD} predicted private",
              [("metric", "metric"), ("estimate", "estimate [95% CI]")], rows),
        Table("confusion", "Confusion (images)", [("truth", "ground truth"), ("private", "predicted private"), ("public", "predicted public")],
              [{"truth": "private", "private": c["tp"], "public": c["fn"]}, {"truth": "public", "private": c["fp"], "public": c["tn"]}]),
    ]
    points = binary_points(run, profile)
    valid = (points["outcome"] == "ok") & np.isfinite(points["pred"])
    charts = []
    for level in (1, 2, 3, 4):
        counts, edges = histogram(points["pred"][valid & (points["gt_level"] == level)], bins=20)
        charts.append(mark_safe(svg.histogram(counts, edges, title=f"P(private), ground-truth level {level}",
                                              x_label=f"P(private) (GT level {level})", colour=svg.LEVEL_COLOURS[level], width=300, height=180)))
    context = {"run": run, "form": form, "profile": profile, "report": report, "threshold": threshold, "charts": charts,
               "classifier": run.request_params or {}}
    meta = {"run": run.pk, "task": run.task, "profile": profile.label, "threshold": threshold}
    return _respond(request, form, f"binary-run-{run.pk}", "scoring/binary_run.html", context, tables, meta)
