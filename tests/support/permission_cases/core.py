"""Permission cases for the site-wide pages and the protected image bytes."""
from . import ALL_ROLES, Case, matrix


def setup(world):
    from tests.conftest import png_bytes
    from annotations.images import attach, clean_image
    from annotations.models import Image

    image = Image(vispr_id="2017_00000001", split="test", source="permission-test")
    attach(image, clean_image(png_bytes()))
    image.save()
    world["image"] = image


def cases(world):
    image = world["image"]
    return [
        Case("home", expect=ALL_ROLES),
        Case("home", method="post", expect=matrix(outsider=403, reviewer_a=405, reviewer_b=405, adjudicator=405, admin=405)),
        Case("login", expect=matrix(anonymous=200, outsider=302, reviewer_a=302, reviewer_b=302, adjudicator=302, admin=302)),
        Case("logout", method="post", expect=matrix(anonymous=302, outsider=302, reviewer_a=302, reviewer_b=302, adjudicator=302, admin=302)),
        # Outsiders get 403 from the role check before any object lookup.
        Case("annotations:image_bytes", kwargs={"image_id": image.pk}, expect=ALL_ROLES),
        Case("annotations:image_bytes", kwargs={"image_id": 999999}, expect=matrix(reviewer_a=404, reviewer_b=404, adjudicator=404, admin=404)),
    ]
