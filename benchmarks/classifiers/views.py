"""Its pages: the leaderboard (classifier runs beside the judge runs' binary view, not ranked), a
classifier run's figures (`figures_url`), and the registered classifiers. Adjudicators and admins see
the first two, as CPRT's binary view; the classifier list is the admins'."""
from __future__ import annotations

import numpy as np
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from core.roles import ROLE_ADMIN, STAFF_ROLES, require_role
from inference import benchmarks, kinds
from inference.providers.onnx.models import ClassifierModel
from inference.providers.onnx.session import execution_providers
from scoring import svg
from scoring.access import get_run_for_review
from scoring.binary_views import run_columns, run_rows, threshold_form
from scoring.metrics import histogram
from scoring.models import ScoringProfile
from scoring.services.binary_view import binary_points, binary_reports, finished_runs
from scoring.tables import Table
from scoring.views import _bad_request, _respond

from . import metrics
from .kind import BinaryKind


def _figures():
    """The declaration's figures of the kind: the leaderboard's metric columns and the run page's rows, in order."""
    return benchmarks.of_kind(BinaryKind.key).figures[BinaryKind.key]


@require_role(*STAFF_ROLES)
@require_GET
def leaderboard(request):
    form = threshold_form(request)
    if not form.is_valid():
        return _bad_request(request, form)
    threshold = form.cleaned_data["threshold"]
    profile = ScoringProfile.active()
    classifiers, judges = metrics.classifier_runs(), finished_runs("judge")
    reports = {**metrics.reports(classifiers, profile, threshold), **binary_reports(judges, profile, threshold)}
    note = (f"Private = ground-truth levels 1–{threshold}. Listed side by side, not ranked: classifier runs never enter the "
            "severity leaderboard. AUC ranks images by P(private) (classifiers) or by the predicted score (judges).")
    columns, keys = run_columns((f.key, f.label) for f in _figures()), [f.key for f in _figures()]
    tables = [Table("classifiers", "Local classifiers (binary runs)", columns, run_rows(classifiers, reports, BinaryKind.figures_url, keys), note),
              Table("judges", "VLM judge runs, binary view of their severity", columns, run_rows(judges, reports, metrics=keys), note)]
    board = [{"run": run, "row": row, "figures": [row[k] for k in keys]} for run, row in zip(classifiers, tables[0].rows)]
    context = {"form": form, "profile": profile, "threshold": threshold, "p_threshold": metrics.P_PRIVATE_AT, "kind": BinaryKind,
               "board": board, "figure_labels": [f.label for f in _figures()],
               "status": benchmarks.of_kind(BinaryKind.key).data_status()}
    meta = {"profile": profile.label, "threshold": threshold}
    return _respond(request, form, "local-classifiers", "classifiers/leaderboard.html", context, tables, meta)


@require_role(*STAFF_ROLES)
@require_GET
def figures(request, run_id: int):
    run = get_run_for_review(request.user, run_id)
    if run.task != BinaryKind.key:  # another kind's run: its own figures page
        return redirect(kinds.get(run.task)(run).figures_url(run))
    form = threshold_form(request)
    if not form.is_valid():
        return _bad_request(request, form)
    threshold = form.cleaned_data["threshold"]
    profile = ScoringProfile.active()
    report = metrics.reports([run], profile, threshold)[run.pk]
    rows = [{"metric": f.label, "estimate": report["metrics"][f.key]} for f in _figures()]
    rows.append({"metric": "images private / public (ground truth)", "estimate": f"{report['support_private']} / {report['support_public']}"})
    c = report["confusion"]
    tables = [
        Table("binary", f"Binary view: levels 1–{threshold} private, P(private) ≥ {metrics.P_PRIVATE_AT} predicted private",
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
               "classifier": run.request_params or {}, "leaderboard": reverse("classifiers:leaderboard")}
    meta = {"run": run.pk, "task": run.task, "profile": profile.label, "threshold": threshold, "provenance": run.provenance}
    return _respond(request, form, f"binary-run-{run.pk}", "classifiers/figures.html", context, tables, meta)


@require_role(ROLE_ADMIN)
@require_GET
def classifier_list(request):
    """The registered classifiers (the onnx provider's registry); registering is the command line's
    (`manage.py register_classifier`), because it reads a file on the server."""
    models = list(ClassifierModel.objects.select_related("created_by"))
    return render(request, "classifiers/list.html", {"models": models, "execution": ", ".join(execution_providers()), "kind": BinaryKind})
