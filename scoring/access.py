"""One access helper per object type for the scoring pages: fetch what the user may see, or 404.

Who sees what [decision, docs/permissions.md]: the scoring pages show model outputs and every
annotator's labels side by side, which would break blind labeling, so only adjudicators and admins
see them; reviewers get 403 from the role check, and anyone else asking for an object gets 404 here.
Export jobs are for admins only: an export can carry every annotator's labels and the images.
"""
from __future__ import annotations

from django.http import Http404

from annotations.models import Image
from core.roles import ROLE_ADMIN, STAFF_ROLES, role_of
from inference.models import Run

from .models import ExportJob


def get_run_for_review(user, run_id: int) -> Run:
    """A run as the scoring pages show it (metrics, disagreements): adjudicators and admins; else 404.
    The run pages themselves use inference.access.get_run_for_admin (admins only)."""
    if role_of(user) not in STAFF_ROLES:
        raise Http404("No such run.")
    try:
        # The image and item lists are 0.7 MB each at 100k images: only annotate-run pages read the image
        # list (one more query there), and no scoring page reads the item list.
        return Run.objects.select_related("annotator").defer("image_ids", "item_ids").get(pk=run_id)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None


def get_image_for_review(user, image_id: int) -> Image:
    if role_of(user) not in STAFF_ROLES:
        raise Http404("No such image.")
    try:
        return Image.objects.get(pk=image_id)
    except Image.DoesNotExist:
        raise Http404("No such image.") from None


def get_export_for_user(user, job_id: int) -> ExportJob:
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such export.")
    try:
        return ExportJob.objects.select_related("profile", "created_by").get(pk=job_id)
    except ExportJob.DoesNotExist:
        raise Http404("No such export.") from None
