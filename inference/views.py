"""Run pages (admins only): launch, list with live progress, one run's results, cancel, resume, prompts.

Reviewers must not see model outputs before they label, so every page here is admin-only.
"""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.idempotency import once_per_submission
from core.roles import ROLE_ADMIN, require_role

from . import launching, lifecycle, prompts, providers, ratelimit, run_labels
from .access import get_run_for_admin
from .forms import LaunchForm
from .models import Run, RunResult


@require_role(ROLE_ADMIN)
@require_GET
def run_list(request):
    page = Paginator(Run.objects.select_related("created_by"), 25).get_page(request.GET.get("page"))
    return render(request, "inference/run_list.html", {"page": page, "any_active": any(r.is_active for r in page.object_list)})


@require_role(ROLE_ADMIN)
@require_GET
def run_list_rows(request):
    """The runs table body, polled by htmx while any run on the page is active."""
    page = Paginator(Run.objects.select_related("created_by"), 25).get_page(request.GET.get("page"))
    return render(request, "inference/_run_rows.html", {"page": page, "any_active": any(r.is_active for r in page.object_list)})


@require_role(ROLE_ADMIN)
@require_http_methods(["GET", "POST"])
@once_per_submission
def run_new(request):
    form = LaunchForm(request.POST or None)
    estimate = None
    if request.method == "POST" and form.is_valid():
        if request.POST.get("action") == "estimate":
            estimate = launching.plan(form.spec())
        else:
            try:
                run = launching.launch_run(request.user, form.spec())
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Run #{run.pk} launched over {run.total_images} images.")
                return redirect("inference:run_detail", run_id=run.pk)
    status = 400 if form.errors else 200
    return render(request, "inference/run_new.html", {"form": form, "plan": estimate, "limiter": ratelimit.backend_name()}, status=status)


@require_role(ROLE_ADMIN)
@require_POST
def run_estimate(request):
    """The estimate panel of the launch form (htmx swaps it in whenever the form changes)."""
    form = LaunchForm(request.POST)
    plan = launching.plan(form.spec()) if form.is_valid() else None
    return render(request, "inference/_estimate.html", {"form": form, "plan": plan})


def _detail_context(run: Run, request) -> dict:
    failures = run.results.exclude(outcome=RunResult.OUTCOME_OK).select_related("image").order_by("image__vispr_id")
    predictions = run.results.filter(outcome=RunResult.OUTCOME_OK).select_related("image").order_by("image__vispr_id")
    fail_page = Paginator(failures, 20).get_page(request.GET.get("failures"))
    pred_page = Paginator(predictions, 50).get_page(request.GET.get("predictions"))
    for result in fail_page.object_list:
        result.raw_pretty = json.dumps(result.raw, indent=2, ensure_ascii=False)[:20000]
    if run.task == Run.TASK_ANNOTATE:
        summaries = run_labels.label_summaries(run, [r.image_id for r in pred_page.object_list])
        for result in pred_page.object_list:
            result.labels_summary = summaries.get(result.image_id)
    return {"run": run, "fail_page": fail_page, "pred_page": pred_page, "can_resume": lifecycle.can_resume(run)}


@require_role(ROLE_ADMIN)
@require_GET
def run_detail(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    context = _detail_context(run, request)
    context["prompt_json"] = json.dumps(run.prompt_text, indent=2, ensure_ascii=False)
    return render(request, "inference/run_detail.html", context)


@require_role(ROLE_ADMIN)
@require_GET
def run_progress(request, run_id: int):
    """The progress card of one run (htmx polls it while the run is active)."""
    run = get_run_for_admin(request.user, run_id)
    return render(request, "inference/_run_progress.html", {"run": run, "can_resume": lifecycle.can_resume(run)})


@require_role(ROLE_ADMIN)
@require_POST
def run_cancel(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    if lifecycle.cancel_run(request.user, run):
        messages.info(request, f"Run #{run.pk}: cancel requested; workers stop within seconds.")
    else:
        messages.error(request, f"Run #{run.pk} is {run.status}; there is nothing to cancel.")
    return _back(request, run)


@require_role(ROLE_ADMIN)
@require_POST
def run_resume(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    if not lifecycle.can_resume(run):
        messages.error(request, f"Run #{run.pk} is {run.status} and its workers are alive; nothing to resume.")
    else:
        n = lifecycle.resume_run(request.user, run)
        messages.info(request, f"Run #{run.pk}: re-dispatched {n} images without a result.")
    return _back(request, run)


@require_role(ROLE_ADMIN)
@require_POST
def run_batch_retry(request, run_id: int):
    """Retry a batch run's failed or expired requests, online or as a follow-up batch (the admin's choice)."""
    from .batch import control

    run = get_run_for_admin(request.user, run_id)
    try:
        n = control.retry(request.user, run, request.POST.get("how", ""))
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Run #{run.pk}: retrying {n} failed requests {request.POST['how']}.")
    return _back(request, run)


def _back(request, run: Run):
    if request.htmx:
        run.refresh_from_db()
        return render(request, "inference/_run_progress.html", {"run": run, "can_resume": lifecycle.can_resume(run)})
    return redirect("inference:run_detail", run_id=run.pk)


@require_role(ROLE_ADMIN)
@require_GET
def prompt_catalogue(request):
    return render(
        request,
        "inference/prompts.html",
        {"items": prompts.catalogue(), "providers": providers.availability(), "limiter": ratelimit.backend_name()},
    )
