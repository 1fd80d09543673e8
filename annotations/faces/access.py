"""Access helpers for the face-anonymization pages: staff only (adjudicators and admins), like the
other review pages; anyone else asking for a job or a variant gets 404."""
from __future__ import annotations

from django.http import Http404

from core.roles import STAFF_ROLES, role_of

from .models import AnonymizationJob, FaceVariant


def get_job_for_user(user, job_id: int) -> AnonymizationJob:
    if role_of(user) not in STAFF_ROLES:
        raise Http404("No such anonymization job.")
    try:
        return AnonymizationJob.objects.select_related("created_by").get(pk=job_id)
    except AnonymizationJob.DoesNotExist:
        raise Http404("No such anonymization job.") from None


def get_variant_for_user(user, variant_id: int) -> FaceVariant:
    if role_of(user) not in STAFF_ROLES:
        raise Http404("No such variant.")
    try:
        return FaceVariant.objects.select_related("image").get(pk=variant_id)
    except FaceVariant.DoesNotExist:
        raise Http404("No such variant.") from None
