"""The SFT export launch (admins): POST from the exports page; the job page is the dataset export's."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.idempotency import once_per_submission
from core.roles import ROLE_ADMIN, require_role
from scoring.forms import ExportJobForm
from scoring.models import ExportJob
from scoring.views import EXPORTS_PAGE

from .forms import SFTExportForm
from .job import start_sft_export


@require_role(ROLE_ADMIN)
@require_POST
@once_per_submission
def sft_export_start(request):
    form = SFTExportForm(request.POST)
    if form.is_valid():
        job = start_sft_export(request.user, form.cleaned_data)
        messages.success(request, f"Fine-tuning export #{job.pk} queued; a worker builds it.")
        return redirect("scoring:export", job_id=job.pk)
    page = Paginator(ExportJob.objects.select_related("profile", "created_by"), EXPORTS_PAGE).get_page(1)
    return render(request, "scoring/exports.html", {"form": ExportJobForm(), "page": page, "sft_form": form}, status=400)
