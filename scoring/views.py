"""Scoring pages: leaderboard, run metrics, agreement, disagreements, counterfactual faces
(adjudicators and admins, see scoring/access.py for why), and dataset exports (admins only). The
review and adjudication page is scoring/review_views.py.

Each page validates its query parameters with a form (400 with the messages otherwise) and can be
downloaded with ?format=csv&table=<name> or ?format=json; every download is audited.
"""
from __future__ import annotations

import json

import numpy as np
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods

from annotations import taxonomy
from annotations.models import Image
from core import jobviews
from core.files import protected_file_response
from core.idempotency import once_per_submission
from core.roles import ROLE_ADMIN, STAFF_ROLES, require_role
from core.audit import audit
from inference import benchmarks

from . import exports, leaderboard_tables, queries, study_tables, svg
from . import tables as T
from . import calibration as calibration_lib
from .services import counterfactuals
from .services.agreement import agreement_study, annotate_run_agreement
from .services.cache import gather, served_stale
from .services.calibration import run_calibration
from .services.comparison import compare_runs
from .services import disagreements as dispute_queue
from .services.disagreements import disagreement_queue
from .services.leaderboard import is_ablation, leaderboard_ranking, training_overlap
from .services.run_metrics import run_metrics, run_points, weight_sensitivity
from .services.run_page import page_data, run_page_data
from .access import get_export_for_user, get_run_for_review
from .forms import ASSISTED_CHOICES as AGREEMENT_ASSISTED
from .forms import (
    AgreementForm, CalibrationForm, CompareForm, CounterfactualForm, DisagreementForm, ExportJobForm,
    LeaderboardForm, RunForm,
)
from .metrics import predicted_levels
from .models import ExportJob, ImageScore, ScoringProfile

QUEUE_PAGE = 50


# ---------------------------------------------------------------------------------------------
# Helpers: 400 answers, downloads


def _bad_request(request, form, title="Bad request"):
    errors = [f"{field}: {msg}" if field != "__all__" else msg for field, msgs in form.errors.items() for msg in msgs]
    return render(request, "scoring/bad_request.html", {"title": title, "errors": errors}, status=400)


def _download_links(request, tables: list[T.Table]) -> list[dict]:
    links = []
    for t in tables:
        q = request.GET.copy()
        q["format"], q["table"] = "csv", t.name
        links.append({"title": t.title, "csv": "?" + q.urlencode(), "name": t.name})
    q = request.GET.copy()
    q.pop("table", None)
    q["format"] = "json"
    return links + [{"title": "every table", "json": "?" + q.urlencode(), "name": "all"}]


def _respond(request, form, page: str, template: str, context: dict, tables: list[T.Table], meta: dict | None = None):
    fmt, wanted = form.cleaned_data["format"], form.cleaned_data.get("table") or ""
    stale = served_stale()
    if stale:  # figures from the cache, a job recomputing them (scoring/services/cache.py)
        oldest = min(stale.values())
        meta = {**(meta or {}), "updating": True, "figures_from": oldest.isoformat()}
        if fmt == "html":
            messages.info(request, f"Updating: some figures here are from {oldest:%Y-%m-%d %H:%M} UTC; a job is recomputing "
                                   "them with the latest data. Reload in a while.")
    if fmt == "html":
        context.update({"tables": {t.name: t for t in tables}, "downloads": _download_links(request, tables)})
        return render(request, template, context)
    chosen = [t for t in tables if t.name == wanted] if wanted else tables
    if not chosen:
        form.add_error("table", f"This page has no table {wanted!r}; it has: {', '.join(t.name for t in tables)}.")
        return _bad_request(request, form)
    audit(request.user, "export", None, page=page, format=fmt, table=wanted or "all", query=request.GET.urlencode())
    stem = f"cprt-{page}" + (f"-{wanted}" if wanted else "")
    if fmt == "csv":
        response = HttpResponse(T.to_csv(chosen[0]), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{stem}.csv"'
    else:
        body = json.dumps(T.to_json(chosen, meta), indent=1, allow_nan=False, default=str)
        response = HttpResponse(body, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{stem}.json"'
    response["Cache-Control"] = "private, no-store"
    return response


def _blur(request) -> bool:
    profile = getattr(request.user, "profile", None)
    return True if profile is None else profile.blur_images_by_default


# ---------------------------------------------------------------------------------------------
# Leaderboard and run metrics


@require_role(*STAFF_ROLES)
@require_GET
def leaderboard(request):
    form = LeaderboardForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    strategy, sort = form.cleaned_data["strategy"], form.cleaned_data["sort"] or "pearson"
    floor = form.cleaned_data["floor"] / 100
    version, split = form.cleaned_data["version"], form.cleaned_data["split"]
    profile = ScoringProfile.active()
    runs = [] if strategy == "sft" else queries.finished_judge_runs(strategy)
    gt_print = queries.ground_truth_fingerprint(profile) if runs else None  # once for both caches
    reports, ranking = gather(lambda: run_metrics(runs, profile, gt_print),
                              lambda: leaderboard_ranking(runs, profile, floor, version=version, split=split, sort=sort, gt_print=gt_print))
    ablations = [r for r in runs if is_ablation(r)]
    overlap = training_overlap(runs)
    tables = leaderboard_tables.leaderboard(runs, reports, ranking, sort, overlap, ablations)
    meta = leaderboard_tables.page_meta(profile, ranking, overlap, strategy=strategy or "all", sort=sort, coverage_floor=floor)
    context = {"form": form, "profile": profile, "ranking": ranking, "runs": runs, "overlap": overlap,
               "comparison": leaderboard_tables.comparison_text(ranking)}
    return _respond(request, form, "leaderboard", "scoring/leaderboard.html", context, tables, meta)


@require_role(*STAFF_ROLES)
@require_GET
def compare(request):
    """Paired comparison of two judge runs on their common images; the chooser is the page's form."""
    form = CompareForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    runs = list(queries.finished_judge_runs())
    context = {"form": form, "runs": runs, "tables": {}, "downloads": []}
    if form.cleaned_data.get("run_a") is None:
        return render(request, "scoring/compare.html", context)
    run_a, run_b = get_run_for_review(request.user, form.cleaned_data["a"]), get_run_for_review(request.user, form.cleaned_data["b"])
    profile = ScoringProfile.active()
    data = compare_runs(run_a, run_b, profile)
    context.update({"run_a": run_a, "run_b": run_b, "data": data, "profile": profile})
    adjust = form.cleaned_data["adjust"] or "holm"
    meta = {"a": run_a.pk, "b": run_b.pk, "profile": profile.label, "profile_version": profile.version,
            "common_images": data["n_common"], "coverage": data.get("coverage"), "resamples": data["resamples"],
            "test": "paired bootstrap (resampling p-value)", "adjustment": adjust}
    return _respond(request, form, f"compare-{run_a.pk}-{run_b.pk}", "scoring/compare.html", context,
                    [T.comparison_table(data, run_a, run_b, adjust)], meta)


@require_role(*STAFF_ROLES)
@require_GET
def calibration(request, run_id: int):
    """Per-attribute over/under-prediction of an annotate run (table sortable from the page, diverging bars)."""
    run = get_run_for_review(request.user, run_id)
    if run.task == run.TASK_JUDGE:
        raise Http404("Calibration is computed for annotate runs; this is a judge run.")
    form = CalibrationForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    sort = form.cleaned_data["sort"] or "difference"
    adjust = form.cleaned_data["adjust"] or "holm"
    profile = ScoringProfile.active()
    data = run_calibration(run, profile)
    majority = calibration_lib.sort_rows(data["human_majority"], sort)
    consensus = calibration_lib.sort_rows(data["consensus"], sort)
    chart = svg.diverging_bars([(r["attribute"], r["difference"]) for r in majority], title="Model − human majority positive rate",
                               x_label="percentage points (positive: the model over-predicts); whiskers: 95% CI",
                               intervals=[(r["lo"], r["hi"]) for r in majority])
    tables = [T.calibration_table("human_majority", "Against the human majority (two or more humans)", majority, calibration_lib.N_BOOT, adjust),
              T.calibration_table("consensus", f"Against the consensus ground truth (profile {profile.name} v{profile.version})", consensus,
                                  calibration_lib.N_BOOT, adjust)]
    context = {"run": run, "form": form, "data": data, "chart": mark_safe(chart), "finding": calibration_lib.PAPER_FINDING}
    return _respond(request, form, f"calibration-{run.pk}", "scoring/calibration.html", context, tables,
                    {"run": run.pk, "sort": sort, "adjustment": adjust, "profile": profile.label, "profile_version": profile.version})


@require_role(*STAFF_ROLES)
@require_GET
def run_detail(request, run_id: int):
    run = get_run_for_review(request.user, run_id)
    form = RunForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    profile = ScoringProfile.active()
    context = {"run": run, "profile": profile, "form": form, "prompt": json.dumps(run.prompt_text, indent=2, ensure_ascii=False)}
    meta = {"run": run.pk, "task": run.task, "profile": profile.label, "profile_id": profile.pk, "profile_version": profile.version}
    benchmark = benchmarks.of_kind(run.task)
    if benchmark is not None:  # a benchmark folder's run: its own figures page (inference.benchmarks), never severity metrics
        query = request.GET.urlencode()
        return redirect(benchmark.figures_url(run) + (f"?{query}" if query else ""))
    if run.task != run.TASK_JUDGE:
        data = annotate_run_agreement(run)
        context["annotate"] = data
        return _respond(request, form, f"run-{run.pk}", "scoring/run.html", context, [T.annotate_attributes_table(data)], meta)

    threshold = form.cleaned_data["threshold"]
    gt_print = queries.ground_truth_fingerprint(profile)  # once: the three cached parts below share it
    html = form.cleaned_data["format"] == "html"
    report, data, sensitivity = gather(lambda: run_metrics([run], profile, gt_print)[run.pk],
                                       lambda: run_page_data(run, profile, gt_print) if html else None,  # page-sized, cached
                                       lambda: weight_sensitivity(run, profile, gt_print))
    predictions = []
    if not html:  # a download lists every prediction
        points = run_points(run, profile)
        data = page_data(points, profile.bounds)
        predictions = T.prediction_rows(points, _vispr_ids(), predicted_levels(np.nan_to_num(points["pred"]), profile.bounds))
    extremes = T.extremes_table(T.with_image_links(data["extremes"], _vispr_ids([r["image_id"] for r in data["extremes"]])))
    tables = [T.run_metrics_table(report), T.significance_table(report), T.excluded_table(report), T.confusion_table(report),
              T.per_level_table(report), T.binary_table(report, threshold), extremes, T.predictions_table(predictions),
              T.sensitivity_table(sensitivity)]
    thumbs = {i.pk: i for i in Image.objects.filter(id__in=[r["image_id"] for r in extremes.rows])}
    context.update({
        "report": report, "threshold": threshold, "blur": _blur(request),
        "extreme_rows": [(r, thumbs.get(r["image_id"])) for r in extremes.rows],
        "charts": _run_charts(data, profile),
    })
    return _respond(request, form, f"run-{run.pk}", "scoring/run.html", context, tables, meta)


def _vispr_ids(ids=None) -> dict:
    """image id -> VISPR id, of the given images (all: None)."""
    return dict(Image.objects.filter(**({} if ids is None else {"id__in": ids})).values_list("id", "vispr_id"))


def _run_charts(data: dict, profile) -> dict:
    scatter = svg.scatter(
        [tuple(point) for point in data["scatter"]],
        title="Predicted vs ground-truth score", x_label="ground-truth score", y_label="predicted score",
        bounds=profile.bounds.lo[:3],
    )
    per_level = []
    for level in (1, 2, 3, 4):
        counts, edges = data["histograms"][str(level)]
        per_level.append(mark_safe(svg.histogram(
            counts, edges, title=f"Predicted scores, ground-truth level {level}", x_label=f"predicted score (GT level {level})",
            colour=svg.LEVEL_COLOURS[level], width=300, height=180)))
    return {"scatter": mark_safe(scatter), "shown": len(data["scatter"]), "valid": data["valid"], "per_level": per_level}


# ---------------------------------------------------------------------------------------------
# Agreement


@require_role(*STAFF_ROLES)
@require_GET
def agreement(request):
    form = AgreementForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    split, assisted = form.cleaned_data["split"], form.cleaned_data["assisted"]
    report = agreement_study(split, assisted)
    tables = study_tables.agreement_tables(report, taxonomy.active().level_of)
    km = report["kappa_matrix"]
    heatmap = ""
    if report["annotators"]:
        heatmap = svg.heatmap(km["names"], km["names"], km["matrix"], title="Cohen's kappa per annotator pair", scale_label="Cohen's κ")
    context = {"form": form, "report": report, "heatmap": mark_safe(heatmap), "assisted_links": _assisted_links(request, assisted)}
    return _respond(request, form, "agreement", "scoring/agreement.html", context, tables,
                    {"split": split or "all", "assisted": assisted, "weighted_kappa": "linear weights over 0 < 0.5 < 1"})


def _assisted_links(request, current: str) -> list[dict]:
    """The same page with each other assisted mode (the assisted figures one click away)."""
    links = []
    for mode, text in AGREEMENT_ASSISTED:
        q = request.GET.copy()
        q["assisted"] = mode
        links.append({"mode": mode, "text": text, "url": "?" + q.urlencode(), "current": mode == current})
    return links


# ---------------------------------------------------------------------------------------------
# Disagreements, review, adjudication


@require_role(*STAFF_ROLES)
@require_GET
def disagreements(request):
    form = DisagreementForm(request.GET, attribute_keys=taxonomy.active().keys)
    if not form.is_valid():
        return _bad_request(request, form)
    c = form.cleaned_data
    profile = ScoringProfile.active()
    queue = disagreement_queue(profile, c["split"])
    names = {a["id"]: a["name"] for a in queue["annotators"]}
    if c["pair"] and not all(a in names for a in c["pair"]):
        form.add_error("pair", "pair names an annotator without labels here.")
        return _bad_request(request, form)
    rows = dispute_queue.dispute_rows(queue, profile, attribute=c["attribute"], level=int(c["level"]) if c["level"] else None,
                                      pair=c["pair"], sort=c["sort"] or "impact")
    if c["format"] == "html":  # one page of rows read, whatever the size of the queue
        page = Paginator(rows, QUEUE_PAGE).get_page(c["page"] or 1)
        shown = dispute_queue.as_dicts(page.object_list)
        total = page.paginator.count
    else:
        page, shown = None, dispute_queue.as_dicts(rows)
        total = len(shown)
    ids = [r["image_id"] for r in shown]
    current = {i: (lv, s) for i, lv, s in ImageScore.objects.filter(profile=profile, image_id__in=ids).values_list("image_id", "level", "score")}
    vispr = dict(Image.objects.filter(id__in=ids).values_list("id", "vispr_id"))
    table = study_tables.disagreement_table(shown, vispr, current, names)
    pairs = [(f"{a['id']}-{b['id']}", f"{a['name']} / {b['name']}") for i, a in enumerate(queue["annotators"]) for b in queue["annotators"][i + 1:]]
    q = request.GET.copy()
    q.pop("page", None)
    context = {"form": form, "page": page, "total": total, "pairs": pairs, "querystring": q.urlencode(),
               "selected_pair": "-".join(map(str, c["pair"])) if c["pair"] else ""}
    return _respond(request, form, "disagreements", "scoring/disagreements.html", context, [table], {"profile": profile.label})


# ---------------------------------------------------------------------------------------------
# Counterfactual faces


@require_role(*STAFF_ROLES)
@require_GET
def counterfactual(request):
    form = CounterfactualForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    c = form.cleaned_data
    context = {"form": form, "candidates": counterfactuals.counterfactual_candidates()}
    if c.get("base_run") is None:
        return render(request, "scoring/counterfactual.html", {**context, "tables": {}, "downloads": []})
    base, cf = c["base_run"], c["cf_run"]
    data = counterfactuals.counterfactual(base, cf, ScoringProfile.active(), c["drop"])
    chart = svg.histogram(data["histogram"]["counts"], data["histogram"]["edges"], title="Score change per image",
                          x_label="score with − without counterfactual faces", marker=0.0, width=560)
    context.update({
        "base": base, "cf": cf, "data": data, "drop": c["drop"], "chart": mark_safe(chart),
        "prompts": [(base, json.dumps(base.prompt_text, indent=2, ensure_ascii=False)),
                    (cf, json.dumps(cf.prompt_text, indent=2, ensure_ascii=False))],
    })
    profile = ScoringProfile.active()
    versions = study_tables.prompt_versions(base, cf)
    context["prompt_versions"] = versions
    meta = {"base": base.pk, "cf": cf.pk, "drop": c["drop"], "prompt_versions": versions["versions"],
            "mixed_prompt_versions": versions["mixed"], "profile": profile.label, "profile_version": profile.version}
    return _respond(request, form, f"counterfactual-{base.pk}-{cf.pk}", "scoring/counterfactual.html", context,
                    [study_tables.counterfactual_summary_table(data, base, cf)] + study_tables.counterfactual_tables(data), meta)


# ---------------------------------------------------------------------------------------------
# Dataset exports (admins): launch, follow, cancel, resume, download. The work runs on a worker (scoring/exports.py).

EXPORTS_PAGE = 25
EXPORT_CARD = jobviews.JobCard(
    element_id="export-progress", progress_url="scoring:export_progress", cancel_url="scoring:export_cancel",
    resume_url="scoring:export_resume", page_url="scoring:export", unit="image passes",
    resume_label="Resume (build it again)", details="scoring/_export_result.html",
)


@require_role(ROLE_ADMIN)
@require_http_methods(["GET", "POST"])
@once_per_submission
def export_list(request):
    scope = request.GET.get("dataset_version", "")  # the version page's link preselects it
    form = ExportJobForm(request.POST if request.method == "POST" else None, initial={"dataset_version": scope} if scope else None)
    if request.method == "POST" and form.is_valid():
        job = exports.start_export(request.user, form.cleaned_data)
        messages.success(request, f"Export #{job.pk} queued; a worker builds it.")
        return redirect("scoring:export", job_id=job.pk)
    page = Paginator(ExportJob.objects.select_related("profile", "created_by", "dataset_version"), EXPORTS_PAGE).get_page(request.GET.get("page"))
    status = 400 if form.is_bound else 200
    return render(request, "scoring/exports.html", {"form": form, "page": page}, status=status)


@require_role(ROLE_ADMIN)
@require_GET
def export_detail(request, job_id: int):
    job = get_export_for_user(request.user, job_id)
    return render(request, "scoring/export_detail.html", jobviews.card_context(EXPORT_CARD, job, exports.can_resume(job)))


export_progress = require_role(ROLE_ADMIN)(jobviews.progress_view(EXPORT_CARD, get_export_for_user, exports.can_resume))


export_cancel = require_role(ROLE_ADMIN)(jobviews.action_view(
    EXPORT_CARD, get_export_for_user, exports.cancel_export, can_resume=exports.can_resume,
    done="Export #{job.pk}: {result}; nothing is delivered (a running worker stops at its next heartbeat).",
    refused="Export #{job.pk} is {status}; there is nothing to cancel."))


export_resume = require_role(ROLE_ADMIN)(jobviews.action_view(
    EXPORT_CARD, get_export_for_user, exports.resume_export, can_resume=exports.can_resume,
    done="Export #{job.pk} queued again; a worker builds it from the start.",
    refused="Export #{job.pk} is {status}; only a failed, cancelled or abandoned export can be resumed."))


@require_role(ROLE_ADMIN)
@require_GET
def export_download(request, job_id: int):
    job = get_export_for_user(request.user, job_id)
    if not job.downloadable:
        raise Http404("This export has no file to download (not finished, failed, or pushed to the Hub).")
    audit(request.user, "export.download", job, file=job.zip_path)
    return protected_file_response("exports", job.zip_path, content_type="application/zip", download_name=job.download_name, attachment=True)
