"""The three-way counterfactual page (adjudicators and admins, like the other scoring pages):
original vs prompt-level vs pixel-level counterfactual (scoring/pixel_counterfactual.py)."""
from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.roles import STAFF_ROLES, require_role

from . import pixel_counterfactual, study_tables, views
from .forms import ThreeWayForm
from .models import ScoringProfile


@require_role(*STAFF_ROLES)
@require_GET
def three_way(request):
    form = ThreeWayForm(request.GET)
    if not form.is_valid():
        errors = [f"{field}: {msg}" if field != "__all__" else msg for field, msgs in form.errors.items() for msg in msgs]
        return render(request, "scoring/bad_request.html", {"title": "Bad request", "errors": errors}, status=400)
    context = {"form": form, "candidates": pixel_counterfactual.candidates()}
    runs = form.cleaned_data.get("runs")
    if not runs:
        if form.cleaned_data["format"] != "html":
            return render(request, "scoring/bad_request.html", {"title": "Bad request", "errors": [
                "Choose three runs (original, prompt and pixel) to download."]}, status=400)
        return render(request, "scoring/three_way.html", {**context, "tables": {}, "downloads": []})
    original, prompt, pixel = runs
    profile = ScoringProfile.active()
    data = pixel_counterfactual.three_way(original, prompt, pixel, profile, form.cleaned_data["drop"])
    versions = study_tables.prompt_versions(original, prompt, pixel)
    context.update({
        "runs": runs, "original": original, "prompt": prompt, "pixel": pixel, "drop": form.cleaned_data["drop"], "data": data,
        "conditions": [("prompt-level", prompt, data["overall"]["prompt"]), ("pixel-level", pixel, data["overall"]["pixel"])],
        "prompt_versions": versions,
    })
    meta = {"original": original.pk, "prompt": prompt.pk, "pixel": pixel.pk, "drop": form.cleaned_data["drop"],
            "prompt_versions": versions["versions"], "mixed_prompt_versions": versions["mixed"], "face_variant": pixel.face_variant,
            "profile": profile.label, "profile_version": profile.version, "common_images": data["common"],
            "correlation_of_changes": data.get("agreement")}
    return views._respond(request, form, f"three-way-{original.pk}-{prompt.pk}-{pixel.pk}", "scoring/three_way.html", context,
                          study_tables.three_way_tables(data, original, prompt, pixel), meta)
