"""The three-way counterfactual page (adjudicators and admins, like the other scoring pages):
original vs prompt-level vs pixel-level counterfactual (scoring/pixel_counterfactual.py)."""
from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.roles import STAFF_ROLES, require_role

from . import pixel_counterfactual
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
    if runs:
        original, prompt, pixel = runs
        data = pixel_counterfactual.three_way(original, prompt, pixel, ScoringProfile.active(), form.cleaned_data["drop"])
        context.update({
            "runs": runs, "original": original, "prompt": prompt, "pixel": pixel, "drop": form.cleaned_data["drop"], "data": data,
            "conditions": [("prompt-level", prompt, data["overall"]["prompt"]), ("pixel-level", pixel, data["overall"]["pixel"])],
        })
    return render(request, "scoring/three_way.html", context)
