"""Face-anonymization pages (adjudicators and admins): launch a job, follow it, cancel or resume it,
and look at each variant beside its original (both blurred until revealed) with its boxes and residual."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotations.images import mime_type
from core import jobviews
from core.files import protected_file_response
from core.idempotency import once_per_submission
from core.roles import STAFF_ROLES, require_role

from . import jobs, variants
from .access import get_job_for_user, get_variant_for_user
from .forms import AnonymizeForm
from .models import AnonymizationJob, FaceVariant

PAGE = 50
FACES_CARD = jobviews.JobCard(
    element_id="faces-progress", progress_url="faces:job_progress", cancel_url="faces:job_cancel", resume_url="faces:job_resume",
    page_url="faces:job", unit="images", resume_label="Resume (images already done are skipped)",
    details="annotations/faces/_job_counts.html",
)


@require_role(*STAFF_ROLES)
@require_http_methods(["GET", "POST"])
@once_per_submission
def job_list(request):
    form = AnonymizeForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        c = form.cleaned_data
        try:
            job = jobs.start_job(request.user, split=c["split"], method=c["method"], threshold=c["threshold"], margin=c["margin"])
        except variants.VariantError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Anonymization #{job.pk} queued for {job.total} images; a worker makes the variants.")
            return redirect("faces:job", job_id=job.pk)
    page = Paginator(AnonymizationJob.objects.select_related("created_by").defer("image_ids"), 25).get_page(request.GET.get("page"))
    return render(request, "annotations/faces/jobs.html", {"form": form, "page": page}, status=400 if form.is_bound else 200)


@require_role(*STAFF_ROLES)
@require_GET
def job_detail(request, job_id: int):
    job = get_job_for_user(request.user, job_id)
    shown = FaceVariant.objects.filter(image_id__in=job.image_ids[:5000], method=job.method, threshold=job.threshold,
                                       margin=job.margin).select_related("image").order_by("-residual_faces", "-faces", "image_id")
    page = Paginator(shown, PAGE).get_page(request.GET.get("page"))
    return render(request, "annotations/faces/job.html", {**jobviews.card_context(FACES_CARD, job, jobs.can_resume(job)), "page": page})


# When the job has just ended, the page reloads once, so that its variants table shows what the job made.
job_progress = require_role(*STAFF_ROLES)(jobviews.progress_view(FACES_CARD, get_job_for_user, jobs.can_resume, refresh_when_over=True))


job_cancel = require_role(*STAFF_ROLES)(jobviews.action_view(
    FACES_CARD, get_job_for_user, jobs.cancel_job, can_resume=jobs.can_resume,
    done="Anonymization #{job.pk}: cancel requested; the worker stops after the images in hand.",
    refused="Anonymization #{job.pk} is {status}; there is nothing to cancel."))


job_resume = require_role(*STAFF_ROLES)(jobviews.action_view(
    FACES_CARD, get_job_for_user, jobs.resume_job, can_resume=jobs.can_resume,
    done="Anonymization #{job.pk} queued again; images already done are skipped.",
    refused="Anonymization #{job.pk} is {status} and has nothing to resume."))


@require_role(*STAFF_ROLES)
@require_GET
def variant_detail(request, variant_id: int):
    variant = get_variant_for_user(request.user, variant_id)
    others = FaceVariant.objects.filter(image=variant.image).exclude(pk=variant.pk)
    return render(request, "annotations/faces/variant.html", {"variant": variant, "image": variant.image, "others": others})


@require_role(*STAFF_ROLES)
@require_GET
def variant_bytes(request, variant_id: int):
    variant = get_variant_for_user(request.user, variant_id)
    if not variant.file:
        raise Http404("This variant has no stored file.")
    suffix = ".png" if variant.file.name.endswith(".png") else ".jpg"
    return protected_file_response("images", variant.file.name, content_type=mime_type(variant.file.name),
                                   download_name=f"image-{variant.image_id}-anonymized-{variant.pk}{suffix}")
