"""The Benchmarks page (admins): CPRT itself, then every benchmark of the registry (inference.benchmarks)
with its data status and its next step, so the top bar keeps one link for them all."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotations.models import Image
from core.roles import ROLE_ADMIN, require_role
from inference import benchmarks as registry
from inference.benchmarks import DataStatus

from .models import ImageScore, ScoringProfile


def cprt_status() -> DataStatus:
    """CPRT's own data: images with bytes, and how many the active profile has scored (its consensus)."""
    images = Image.objects.exclude(file="").count()
    scored = ImageScore.objects.filter(profile=ScoringProfile.active()).count()
    summary = f"{images:,} images, {scored:,} with a consensus score"
    if not images:
        return DataStatus(False, summary, "Import images (VISPR or a CPRT-Bench file).", reverse("scoring:imports"))
    if not scored:
        return DataStatus(False, summary, "Label images, or put model annotators in the consensus set.", reverse("annotations:queue"))
    return DataStatus(True, summary, "Launch judge runs; they fill the leaderboard.", reverse("inference:run_new") + "?task=judge")


@require_role(ROLE_ADMIN)
@require_GET
def benchmarks(request):
    rows = [{"benchmark": b, "url": b.home_url(), "status": b.data_status()} for b in registry.all_benchmarks()]
    return render(request, "scoring/benchmarks.html", {"cprt": cprt_status(), "rows": rows})
