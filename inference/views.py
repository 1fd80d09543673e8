"""Run pages (admins only): launch, list with live progress, one run's results, cancel, resume,
retry the failed items, prompts.

Reviewers must not see model outputs before they label, so every page here is admin-only.
"""
from __future__ import annotations

import json
from dataclasses import replace

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.datasets.models import DatasetVersion
from core import jobviews
from core.idempotency import once_per_submission
from core.roles import ROLE_ADMIN, require_role

from . import kinds, launching, providers, ratelimit, runs
from .access import get_run_for_admin
from .batch import control as batch_control
from .batch import status as batch_status
from .forms import LaunchForm
from .models import Run, RunResult


# The run's progress card (templates/_job_progress.html): counts by outcome, tokens, cost, provider batches.
RUN_CARD = jobviews.JobCard(
    element_id="run-progress", progress_url="inference:run_progress", cancel_url="inference:run_cancel",
    resume_url="inference:run_resume", page_url="inference:run_detail", unit="images",
    resume_label="Resume (re-dispatch images without a result)", details="inference/_run_outcomes.html",
)


def _extra(run: Run) -> dict:
    """What the run's own lines show beside the card: the run, and a batch run's provider batches."""
    return {"run": run, "batch_summary": batch_status.summary(run) if run.mode == Run.MODE_BATCH else None,
            "can_retry_failed": runs.can_retry_failed(run)}


def _run_card(run: Run) -> jobviews.JobCard:
    """The card counts the run's items in its kind's unit (images, pairs, persons, items)."""
    unit = kinds.KINDS[run.task].unit if run.task in kinds.KINDS else "items"
    return replace(RUN_CARD, unit=unit, resume_label=f"Resume (re-dispatch {unit} without a result)")


def _card(run: Run) -> dict:
    return jobviews.card_context(_run_card(run), run, runs.can_resume(run), **_extra(run))


def _listed_runs():
    """The runs as the list shows them: without their frozen id lists (two lists of 100,000 ids a run at
    lab scale, which the table never reads) nor the prompt texts."""
    return Run.objects.select_related("created_by").defer(*LIST_DEFERRED)


LIST_DEFERRED = ("image_ids", "item_ids", "prompt_text")


@require_role(ROLE_ADMIN)
@require_GET
def run_list(request):
    page = Paginator(_listed_runs(), 25).get_page(request.GET.get("page"))
    return render(request, "inference/run_list.html", {"page": page, "any_active": any(r.is_active for r in page.object_list)})


@require_role(ROLE_ADMIN)
@require_GET
def run_list_rows(request):
    """The runs table body, polled by htmx while any run on the page is active."""
    page = Paginator(_listed_runs(), 25).get_page(request.GET.get("page"))
    return render(request, "inference/_run_rows.html", {"page": page, "any_active": any(r.is_active for r in page.object_list)})


@require_role(ROLE_ADMIN)
@require_http_methods(["GET", "POST"])
@once_per_submission
def run_new(request):
    form = LaunchForm(request.POST or None, initial=_initial_scope(request))
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
                messages.success(request, f"Run #{run.pk} launched over {run.total_images} {kinds.get(run.task).unit}.")
                return redirect("inference:run_detail", run_id=run.pk)
    status = 400 if form.errors else 200
    return render(request, "inference/run_new.html", {"form": form, "plan": estimate, "limiter": ratelimit.backend_name()}, status=status)


def _initial_scope(request) -> dict:
    """What the link preselects: `?task=KEY` the kind (a benchmark's "launch a run"), `?provider=NAME`
    the provider (the form re-renders with both when either changes), `?dataset_version=NAME` (the
    version page's link) the version. Unknown values are ignored: the form's defaults stand."""
    initial = {}
    name = request.GET.get("dataset_version", "")
    if name and DatasetVersion.objects.filter(name=name).exists():
        initial["dataset_version"] = name
    if request.GET.get("task", "") in kinds.KINDS:
        initial["task"] = request.GET["task"]
    if request.GET.get("provider", "") in providers.PROVIDERS:
        initial["provider"] = request.GET["provider"]
    return initial


@require_role(ROLE_ADMIN)
@require_POST
def run_estimate(request):
    """The estimate panel of the launch form (htmx swaps it in whenever the form changes)."""
    form = LaunchForm(request.POST)
    plan = launching.plan(form.spec()) if form.is_valid() else None
    return render(request, "inference/_estimate.html", {"form": form, "plan": plan})


FAILED_OUTCOMES = [o for o, _ in RunResult.OUTCOMES if o != RunResult.OUTCOME_OK]


def _detail_context(run: Run, request) -> dict:
    """Its 20 failures and 50 answers a page, in item order: read from the (run, outcome, item_id) index,
    never by sorting all its results (100,000 at lab scale) on an image's VISPR id."""
    failures = run.results.filter(outcome__in=FAILED_OUTCOMES).select_related("image").order_by("item_id")
    predictions = run.results.filter(outcome=RunResult.OUTCOME_OK).select_related("image").order_by("item_id")
    fail_page = Paginator(failures, 20).get_page(request.GET.get("failures"))
    pred_page = Paginator(predictions, 50).get_page(request.GET.get("predictions"))
    for result in fail_page.object_list:
        result.raw_pretty = json.dumps(result.raw, indent=2, ensure_ascii=False)[:20000]
    kind = kinds.get(run.task)(run)
    kind.decorate_predictions(pred_page.object_list)
    return {**_card(run), "fail_page": fail_page, "pred_page": pred_page, "predictions_template": kind.predictions_template,
            "figures_url": kind.figures_url(run), "leaderboard_url": kind.leaderboard_url()}


@require_role(ROLE_ADMIN)
@require_GET
def run_detail(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    context = _detail_context(run, request)
    context["prompt_json"] = json.dumps(run.prompt_text, indent=2, ensure_ascii=False)
    return render(request, "inference/run_detail.html", context)


run_progress = require_role(ROLE_ADMIN)(jobviews.progress_view(RUN_CARD, get_run_for_admin, runs.can_resume, extra=_extra,
                                                                card_for=_run_card))


def _act(request, run: Run, action, *, done: str, refused: str):
    return jobviews.act(request, _run_card(run), run, action, done=done, refused=refused, can_resume=runs.can_resume, **_extra(run))


@require_role(ROLE_ADMIN)
@require_POST
def run_cancel(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    return _act(request, run, runs.cancel_run, done="Run #{job.pk}: cancel requested; workers stop within seconds.",
                refused="Run #{job.pk} is {status}; there is nothing to cancel.")


def _resume(user, run: Run) -> int | None:
    """How many images were re-dispatched; None when the run has nothing to resume."""
    return runs.resume_run(user, run) if runs.can_resume(run) else None


@require_role(ROLE_ADMIN)
@require_POST
def run_resume(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    return _act(request, run, _resume, done="Run #{job.pk}: re-dispatched {result} images without a result.",
                refused="Run #{job.pk} is {status} and its workers are alive; nothing to resume.")


def _retry_failed(user, run: Run) -> int | None:
    """How many failed images were re-dispatched; None when there is nothing to retry."""
    return runs.retry_failed(user, run) or None


@require_role(ROLE_ADMIN)
@require_POST
def run_retry_failed(request, run_id: int):
    run = get_run_for_admin(request.user, run_id)
    return _act(request, run, _retry_failed, done="Run #{job.pk}: re-dispatched {result} images whose answer was an error.",
                refused="Run #{job.pk} is {status} with no failed items to retry.")


@require_role(ROLE_ADMIN)
@require_POST
def run_batch_retry(request, run_id: int):
    """Retry a batch run's failed or expired requests, online or as a follow-up batch (the admin's choice)."""
    run = get_run_for_admin(request.user, run_id)
    try:
        n = batch_control.retry(request.user, run, request.POST.get("how", ""))
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Run #{run.pk}: retrying {n} failed requests {request.POST['how']}.")
    return _back(request, run)


def _back(request, run: Run):
    if request.htmx:
        run.refresh_from_db()
        return render(request, jobviews.PARTIAL, _card(run))
    return redirect("inference:run_detail", run_id=run.pk)


@require_role(ROLE_ADMIN)
@require_GET
def prompt_catalogue(request):
    return render(
        request,
        "inference/prompts.html",
        {"items": kinds.catalogue(), "providers": providers.availability(), "limiter": ratelimit.backend_name()},
    )
