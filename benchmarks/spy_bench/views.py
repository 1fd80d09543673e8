"""SPY-Bench pages (admins only, like every run page): the leaderboard with our runs and imported
results, the set and results imports, a run's (or an import's) report with failure examples, and the
export of a run in upstream's evaluated-row format."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.roles import ROLE_ADMIN, require_role

from inference.access import get_run_for_admin

from . import importing, reports
from .models import SpyImport, SpyItem, SpySet
from .metrics import MetricsError
from .upstream import BenchmarkError

UPLOAD_LIMIT = 200 * 2**20


class SetImportForm(forms.Form):
    name = forms.CharField(max_length=200)
    benchmark = forms.FileField(help_text='The benchmark file ({"benchmark_list": [...]}).')
    label2text = forms.FileField(help_text="label2text.json")
    skip_missing = forms.BooleanField(required=False, help_text="Import the items whose VISPR image is here; skip the others.")


class ResultsImportForm(forms.Form):
    name = forms.CharField(max_length=200)
    model_name = forms.CharField(max_length=200, label="Model")
    judge_model = forms.CharField(max_length=200, required=False, label="Judge model")
    distractors = forms.BooleanField(required=False)
    spy_set = forms.ModelChoiceField(queryset=SpySet.objects.all(), required=False, label="Set")
    evaluated = forms.FileField(help_text="Evaluated rows (JSONL, upstream's format, with eval_resp).")


def _page(request, set_form=None, results_form=None, status=200):
    return render(request, "spy_bench/index.html", {
        "entries": reports.leaderboard(), "columns": reports.COLUMNS,
        "sets": SpySet.objects.order_by("name"), "item_counts": _item_counts(),
        "set_form": set_form or SetImportForm(), "results_form": results_form or ResultsImportForm(),
    }, status=status)


def _item_counts() -> dict[int, int]:
    from django.db.models import Count

    return dict(SpyItem.objects.values_list("spy_set").annotate(n=Count("id")).values_list("spy_set", "n"))


def _read(upload) -> bytes:
    if upload.size > UPLOAD_LIMIT:
        raise BenchmarkError(f"{upload.name}: {upload.size} bytes, over the limit of {UPLOAD_LIMIT}.")
    return upload.read()


@require_role(ROLE_ADMIN)
@require_GET
def spy_bench(request):
    return _page(request)


@require_role(ROLE_ADMIN)
@require_POST
def spy_set_import(request):
    form = SetImportForm(request.POST, request.FILES)
    if form.is_valid():
        d = form.cleaned_data
        try:
            spy_set = importing.import_set(request.user, d["name"], _read(d["benchmark"]), _read(d["label2text"]), d["skip_missing"],
                                           d["benchmark"].name, d["label2text"].name)
        except BenchmarkError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Imported SPY-Bench set {spy_set.name!r}: {spy_set.items.count()} items.")
            return redirect("spy_bench:index")
    return _page(request, set_form=form, status=400)


@require_role(ROLE_ADMIN)
@require_POST
def spy_results_import(request):
    form = ResultsImportForm(request.POST, request.FILES)
    if form.is_valid():
        d = form.cleaned_data
        try:
            imported = importing.import_results(request.user, d["name"], d["model_name"], _read(d["evaluated"]), d["judge_model"],
                                                d["distractors"], d["spy_set"], d["evaluated"].name)
        except (MetricsError, BenchmarkError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Imported {imported.report['metrics']['total']} evaluated rows as {imported.name!r}.")
            return redirect("spy_bench:index")
    return _page(request, results_form=form, status=400)


def _spy_run(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    if run.task != "spy-bench":
        raise Http404("Not a SPY-Bench run.")
    return run


@require_role(ROLE_ADMIN)
@require_GET
def spy_run(request, run_id: int):
    run = _spy_run(request, run_id)
    rows, report = reports.run_report(run)
    return _report_page(request, f"Run #{run.pk}", run, None, rows, report)


@require_role(ROLE_ADMIN)
@require_GET
def spy_import_detail(request, import_id: int):
    imported = SpyImport.objects.filter(pk=import_id).first()
    if imported is None:
        raise Http404("No such import.")
    return _report_page(request, f"Imported: {imported.name}", None, imported, imported.rows, imported.report)


def _report_page(request, title, run, imported, rows, report):
    return render(request, "spy_bench/report.html", {
        "title": title, "run": run, "imported": imported, "report": report, "columns": reports.COLUMNS,
        "overall": reports.cells(report),
        "by_label": reports.table(report["metrics group by label"], report.get("intervals group by label", {})) if report else [],
        "by_scenario": reports.table(report["metrics group by scenario"], report.get("intervals group by scenario", {})) if report else [],
        "failures": reports.failures(rows),
        "ics_note": reports.ics_note(report),
    })


@require_role(ROLE_ADMIN)
@require_GET
def spy_run_export(request, run_id: int):
    run = _spy_run(request, run_id)
    response = HttpResponse(importing.export_run(request.user, run), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="spy-bench-run-{run.pk}.jsonl"'
    return response
