"""Dataset pages (admins): the versions and builds, launching a build from a preset or an uploaded
recipe, following it (the one job progress card), a version's page (members, rules, overlaps, seed,
checksums, the recipe as applied) and a labeling batch made from a version."""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.models import Image
from core import jobviews
from core.idempotency import once_per_submission
from core.roles import ROLE_ADMIN, require_role

from . import build, recipes, versions
from .access import get_build_for_user, get_version_for_user
from .forms import BatchFromVersionForm, BuildForm
from .models import DatasetBuild, DatasetVersion

BUILD_CARD = jobviews.JobCard(
    element_id="dataset-build-progress", progress_url="datasets:build_progress", cancel_url="datasets:build_cancel",
    resume_url="datasets:build_resume", page_url="datasets:build", unit="images read",
    resume_label="Build again (from the start)", details="annotations/datasets/_build_result.html",
)


@require_role(ROLE_ADMIN)
@require_http_methods(["GET", "POST"])
@once_per_submission
def version_list(request):
    form = BuildForm(request.POST if request.method == "POST" else None, request.FILES if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        c = form.cleaned_data
        try:
            splits = build.resolve_splits([c["vispr_split"]]) if c["vispr_split"] else None
            recipe = recipes.with_overrides(c["recipe"], vispr_splits=splits, seed=c["seed"])
            job = build.start_build(request.user, recipe, c["name"])
        except (build.BuildError, recipes.RecipeError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Build #{job.pk} of {job.name} queued over {job.total} images; a worker builds it.")
            return redirect("datasets:build", build_id=job.pk)
    listed = DatasetVersion.objects.select_related("created_by").annotate(n=Count("members")).order_by("-created_at", "-id")
    page = Paginator(listed, 25).get_page(request.GET.get("page"))
    builds = DatasetBuild.objects.select_related("version", "created_by")[:10]
    context = {"form": form, "page": page, "builds": builds, "presets": recipes.preset_names()}
    return render(request, "annotations/datasets/versions.html", context, status=400 if form.is_bound else 200)


@require_role(ROLE_ADMIN)
@require_GET
def preset_json(request, name: str):
    """A preset recipe as JSON (to read it, or to download, edit and upload it)."""
    if name not in recipes.preset_names():
        raise Http404("No such recipe preset.")
    return JsonResponse(recipes.preset(name).as_json(), json_dumps_params={"indent": 2})


@require_role(ROLE_ADMIN)
@require_GET
def build_detail(request, build_id: int):
    job = get_build_for_user(request.user, build_id)
    context = {**jobviews.card_context(BUILD_CARD, job, build.can_resume(job)), "recipe_json": json.dumps(job.recipe, indent=2)}
    return render(request, "annotations/datasets/build.html", context)


build_progress = require_role(ROLE_ADMIN)(jobviews.progress_view(BUILD_CARD, get_build_for_user, build.can_resume))


build_cancel = require_role(ROLE_ADMIN)(jobviews.action_view(
    BUILD_CARD, get_build_for_user, build.cancel_build, can_resume=build.can_resume,
    done="Build #{job.pk}: cancel requested; no version is kept.",
    refused="Build #{job.pk} is {status}; there is nothing to cancel."))


build_resume = require_role(ROLE_ADMIN)(jobviews.action_view(
    BUILD_CARD, get_build_for_user, build.resume_build, can_resume=build.can_resume,
    done="Build #{job.pk} queued again; it starts over.",
    refused="Build #{job.pk} is {status} and cannot be built again (or its name is taken)."))


@require_role(ROLE_ADMIN)
@require_GET
def version_detail(request, version_id: int):
    version = get_version_for_user(request.user, version_id)
    return render(request, "annotations/datasets/version.html", _version_context(request, version, BatchFromVersionForm(
        initial={"name": f"dataset {version.name}"})))


def _version_context(request, version: DatasetVersion, batch_form) -> dict:
    members = Image.objects.filter(dataset_versions=version).order_by("vispr_id").only("vispr_id", "split", "vispr_split", "vispr_labels")
    page = Paginator(members, 50).get_page(request.GET.get("page"))
    candidates = version.recipe.get("candidates", {})
    rules = [{"name": r["name"], "any": r["any"], "none": r["none"], "only": r.get("only"), "quota": r.get("quota"),
              "candidates": candidates.get(r["name"]), "selected": version.rule_counts.get(r["name"], 0)}
             for r in version.recipe.get("rules", [])]
    q = f"?dataset_version={version.name}"
    return {
        "version": version, "page": page, "count": page.paginator.count, "rules": rules, "batch_form": batch_form,
        "recipe_json": json.dumps(version.recipe, indent=2), "build": getattr(version, "build", None),
        "run_url": reverse("inference:run_new") + q, "export_url": reverse("scoring:exports") + q,
    }


@require_role(ROLE_ADMIN)
@require_POST
def version_batch(request, version_id: int):
    """A labeling batch holding the version's images."""
    version = get_version_for_user(request.user, version_id)
    form = BatchFromVersionForm(request.POST)
    if form.is_valid():
        try:
            batch, moved = versions.create_batch(request.user, version, form.cleaned_data["name"])
        except versions.BatchError as exc:
            form.add_error("name", str(exc))
        else:
            note = f" ({moved} of them left another batch)" if moved else ""
            messages.success(request, f"Batch {batch.name} created with the {version.name} images{note}.")
            return redirect("datasets:version", version_id=version.pk)
    context = _version_context(request, version, form)
    return render(request, "annotations/datasets/version.html", context, status=400)
