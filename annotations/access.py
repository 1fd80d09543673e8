"""One access helper per object type: fetch what the user may see, or answer 404."""
from __future__ import annotations

from django.http import Http404

from core.roles import ROLES, role_of

from .models import Image, Labeling


def get_image_for_user(user, image_id: int) -> Image:
    """Any user with a role may see any image record; outsiders and anonymous users get 404."""
    if role_of(user) not in ROLES:
        raise Http404("No such image.")
    try:
        return Image.objects.get(pk=image_id)
    except Image.DoesNotExist:
        raise Http404("No such image.") from None


def get_labeling_for_user(user, labeling_id: int) -> Labeling:
    """A labeling is personal: only the reviewer who owns it may open it (staff read the image history)."""
    if role_of(user) not in ROLES:
        raise Http404("No such labeling.")
    try:
        return Labeling.objects.select_related("image", "image__batch", "annotator").get(pk=labeling_id, annotator__user=user)
    except Labeling.DoesNotExist:
        raise Http404("No such labeling.") from None
