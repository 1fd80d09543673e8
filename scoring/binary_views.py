"""CPRT's binary private/public view: the judge runs' severity read as private (levels 1..T) or public,
with AUC on their predicted score, side by side and never ranked. Its row and column helpers and
its threshold form are shared with pages that list other runs in this view (a benchmark's
leaderboard, e.g. the local classifiers', benchmarks/classifiers/)."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from django.urls import reverse
from django.views.decorators.http import require_GET

from core.roles import STAFF_ROLES, require_role

from . import binary
from .forms import BinaryViewForm
from .models import ScoringProfile
from .services.binary_view import binary_reports, finished_runs
from .tables import Link, Table
from .views import _bad_request, _respond


def run_rows(runs, reports, link: Callable = lambda run: reverse("scoring:run", args=[run.pk]),
             metrics: Iterable[str] = binary.METRICS) -> list[dict]:
    """One row per run: its link (`link(run)`), model, provenance, images, supports, metrics, decision rule."""
    rows = []
    for run in runs:
        r = reports[run.pk]
        row = {"run": Link(f"#{run.pk}", link(run)),
               "model": f"{run.provider}/{run.model_name}" + (f" · {run.strategy}" if run.strategy else ""), "provenance": run.provenance,
               "n": r["n"], "private_public": f"{r['support_private']} / {r['support_public']}", "decision": r["decision"]}
        row.update({name: r["metrics"][name] for name in metrics})
        rows.append(row)
    return rows


def run_columns(metrics: Iterable[tuple[str, str]] = tuple(binary.LABELS.items())) -> list[tuple[str, str]]:
    """The columns of `run_rows`: (metric key, label) pairs in the order given."""
    return ([("run", "run"), ("model", "model"), ("provenance", "provenance"), ("n", "images"), ("private_public", "private / public")]
            + [(name, label + " [95% CI]") for name, label in metrics] + [("decision", "private when")])


def threshold_form(request) -> BinaryViewForm:
    """The threshold form, bound with the default threshold when none is asked for, so that its box
    shows the threshold in force (a bound form shows only what was sent)."""
    data = request.GET.copy()
    if not data.get("threshold"):
        data["threshold"] = str(BinaryViewForm.DEFAULT_THRESHOLD)
    return BinaryViewForm(data)


@require_role(*STAFF_ROLES)
@require_GET
def binary_view(request):
    form = threshold_form(request)
    if not form.is_valid():
        return _bad_request(request, form)
    threshold = form.cleaned_data["threshold"]
    profile = ScoringProfile.active()
    judges = finished_runs("judge")
    reports = binary_reports(judges, profile, threshold)
    note = (f"Private = ground-truth levels 1–{threshold}; a judge run says private when its predicted level is 1–{threshold}. "
            "Listed side by side, not ranked. AUC ranks images by the predicted score.")
    tables = [Table("judges", "VLM judge runs, binary view of their severity", run_columns(), run_rows(judges, reports), note)]
    context = {"form": form, "profile": profile, "threshold": threshold}
    meta = {"profile": profile.label, "threshold": threshold}
    return _respond(request, form, "binary-view", "scoring/binary_view.html", context, tables, meta)
