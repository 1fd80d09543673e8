"""Permission cases for the MultiPriv pages (persons, their images, the leaderboard and run figures):
admins only, like the run pages (they show the persons' images and model outputs)."""
from __future__ import annotations

from . import ADMIN_ONLY, Case, matrix

ADMIN_404 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_405 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)


def setup(world):
    from annotations.images import clean_image
    from benchmarks.multipriv.models import Person, PersonImage
    from inference.models import Run
    from tests.conftest import png_bytes

    person = Person.objects.create(name="person_1", profile={"Name": "Ada"}, raw_profile={"Name": "Ada"},
                                   profile_file="person_1.json", profile_sha256="0" * 64)
    clean = clean_image(png_bytes(color=(1, 2, 3)))
    storage = PersonImage._meta.get_field("file").storage
    name = f"{clean.sha256[:2]}/{clean.sha256}.png"
    if not storage.exists(name):
        from django.core.files.base import ContentFile

        storage.save(name, ContentFile(clean.data))
    image = PersonImage.objects.create(person=person, category="A", index=1, file=name, width=clean.width, height=clean.height,
                                       sha256=clean.sha256)
    world["mp_person"], world["mp_image"] = person, image
    world["mp_run"] = Run.objects.create(task="multipriv-profile", provider="openai", model_name="gpt-5.1",
                                         prompt_version="multipriv-profile-v1", status="finished", total=0)


def cases(world):
    person, image, run = world["mp_person"].pk, world["mp_image"].pk, world["mp_run"].pk
    return [
        Case("multipriv:persons", expect=ADMIN_ONLY),
        Case("multipriv:persons", method="post", expect=ADMIN_405),
        Case("multipriv:person", kwargs={"person_id": person}, expect=ADMIN_ONLY),
        Case("multipriv:person", kwargs={"person_id": 999999}, expect=ADMIN_404),
        Case("multipriv:image_bytes", kwargs={"image_id": image}, expect=ADMIN_ONLY),
        Case("multipriv:image_bytes", kwargs={"image_id": 999999}, expect=ADMIN_404),
        Case("scoring:benchmarks", expect=ADMIN_ONLY),
        Case("scoring:benchmarks", method="post", expect=ADMIN_405),
        Case("multipriv:leaderboard", expect=ADMIN_ONLY),
        Case("multipriv:leaderboard", query="format=json", expect=ADMIN_ONLY),
        Case("multipriv:leaderboard", method="post", expect=ADMIN_405),
        Case("multipriv:run", kwargs={"run_id": run}, expect=ADMIN_ONLY),
        Case("multipriv:run", kwargs={"run_id": 999999}, expect=ADMIN_404),
        Case("multipriv:run", kwargs={"run_id": world["run"].pk}, expect=ADMIN_404),  # a run of another kind
        # rescoring: admins only, POST only; without the confirmation (or with nothing changed) 400, nothing written
        Case("multipriv:rescore", kwargs={"run_id": run}, method="post", expect=matrix(reviewer_a=403, reviewer_b=403,
                                                                                              adjudicator=403, admin=400)),
        Case("multipriv:rescore", kwargs={"run_id": run}, method="post", data={"confirm": "yes"},
             expect=matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)),
        Case("multipriv:rescore", kwargs={"run_id": run}, expect=ADMIN_405),
        Case("multipriv:rescore", kwargs={"run_id": 999999}, method="post", expect=ADMIN_404),
        Case("multipriv:rescore", kwargs={"run_id": world["run"].pk}, method="post", expect=ADMIN_404),
    ]
