"""Access helpers of the dataset pages: admins only (like runs and exports); anyone else asking for a
build or a version gets 404 (the views' role check answers 403 first)."""
from __future__ import annotations

from django.http import Http404

from core.roles import ROLE_ADMIN, role_of

from .models import DatasetBuild, DatasetVersion


def get_build_for_user(user, build_id: int) -> DatasetBuild:
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such dataset build.")
    try:
        return DatasetBuild.objects.select_related("created_by", "version").get(pk=build_id)
    except DatasetBuild.DoesNotExist:
        raise Http404("No such dataset build.") from None


def get_version_for_user(user, version_id: int) -> DatasetVersion:
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such dataset version.")
    try:
        return DatasetVersion.objects.select_related("created_by").get(pk=version_id)
    except DatasetVersion.DoesNotExist:
        raise Http404("No such dataset version.") from None
