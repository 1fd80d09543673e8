"""MultiPriv pages (admins only, like runs): the imported persons, one person's images and profile,
and the images' bytes (permission-checked, never cached)."""
from __future__ import annotations

from django.db.models import Count
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotations.images import mime_type
from core.files import protected_file_response
from core.roles import ROLE_ADMIN, require_role, role_of

from . import fields
from .models import Person, PersonImage


def get_person_for_user(user, person_id: int) -> Person:
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such person.")
    try:
        return Person.objects.get(pk=person_id)
    except Person.DoesNotExist:
        raise Http404("No such person.") from None


def get_person_image_for_user(user, image_id: int) -> PersonImage:
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such image.")
    try:
        return PersonImage.objects.select_related("person").get(pk=image_id)
    except PersonImage.DoesNotExist:
        raise Http404("No such image.") from None


@require_role(ROLE_ADMIN)
@require_GET
def person_list(request):
    persons = Person.objects.annotate(n_images=Count("images")).order_by("pk")
    return render(request, "multipriv/persons.html", {"persons": persons, "categories": fields.categories()})


@require_role(ROLE_ADMIN)
@require_GET
def person_detail(request, person_id: int):
    person = get_person_for_user(request.user, person_id)
    names = fields.categories()
    rows = [{"field": f, "value": v, "category": fields.category_of(f), "category_name": names.get(fields.category_of(f), "other")}
            for f, v in person.profile.items()]
    return render(request, "multipriv/person.html", {"person": person, "rows": rows, "images": person.images.all(),
                                                                 "categories": names})


@require_role(ROLE_ADMIN)
@require_GET
def person_image_bytes(request, image_id: int):
    image = get_person_image_for_user(request.user, image_id)
    suffix = ".png" if mime_type(image.file.name) == "image/png" else ".jpg"
    return protected_file_response("images", image.file.name, content_type=mime_type(image.file.name),
                                   download_name=f"multipriv-{image.pk}{suffix}")
