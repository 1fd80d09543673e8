"""Pages and the protected image view."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import FileResponse, Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from cprt_site.lib import ROLES, require_role
from scoring.models import ImageScore, ScoringProfile

from .access import get_image_for_user
from .models import Image


@require_role(*ROLES)
@require_GET
def home(request):
    """The image list with each image's consensus level and score under the active profile."""
    profile = ScoringProfile.objects.filter(is_active=True).first()
    images = Image.objects.order_by("vispr_id")
    page = Paginator(images, 48).get_page(request.GET.get("page"))
    scores = {}
    if profile is not None:
        scores = {s.image_id: s for s in ImageScore.objects.filter(profile=profile, image__in=list(page.object_list))}
    rows = [(image, scores.get(image.id)) for image in page.object_list]
    return render(request, "annotations/home.html", {"page": page, "rows": rows, "profile": profile})


@require_role(*ROLES)
@require_GET
def image_bytes(request, image_id: int):
    """Image bytes: authenticated, permission-checked, never cached, never with the original name."""
    image = get_image_for_user(request.user, image_id)
    if not image.file:
        raise Http404("This image has no stored file.")
    response = FileResponse(image.file.open("rb"), content_type=_content_type(image.file.name))
    response["Cache-Control"] = "private, no-store"
    response["Content-Disposition"] = f'inline; filename="image-{image.pk}{_suffix(image.file.name)}"'
    return response


def _suffix(name: str) -> str:
    return ".png" if name.endswith(".png") else ".jpg"


def _content_type(name: str) -> str:
    return "image/png" if name.endswith(".png") else "image/jpeg"
