"""One access helper per object type: fetch what the user may see, or answer 404."""
from __future__ import annotations

from django.http import Http404

from cprt_site.lib import ROLES, role_of

from .models import Image


def get_image_for_user(user, image_id: int) -> Image:
    """Any user with a role may see any image record; outsiders and anonymous users get 404."""
    if role_of(user) not in ROLES:
        raise Http404("No such image.")
    try:
        return Image.objects.get(pk=image_id)
    except Image.DoesNotExist:
        raise Http404("No such image.") from None
