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
        # The Images page's filters: bad values 400; the consensus attribute is staff only (the blind rule), a
        # reviewer's level filter runs among their own submitted images.
        Case("home", query="split=test&q=2017&vispr_label=a17_color&coverage=none&page_size=96", expect=ALL_ROLES),
        Case("home", query="level=1", expect=ALL_ROLES),
        # Filters from others' labels (VISPR labels, dataset versions, coverage): a reviewer's run among their submitted
        # images only (annotations/blind.py; the blind column checks no unsubmitted image is listed).
        Case("home", query="vispr_label=a0_safe", expect=ALL_ROLES),
        Case("home", query=f"dataset={world['dataset_version'].pk}", expect=ALL_ROLES),
        *[Case("home", query=f"coverage={c}", expect=ALL_ROLES) for c in ("none", "partial", "complete", "models")],
        Case("home", query="split=bogus", expect=matrix(reviewer_a=400, reviewer_b=400, adjudicator=400, admin=400)),
        Case("home", query="attribute=gov_ids", expect=matrix(reviewer_a=400, reviewer_b=400)),
        Case("home", method="post", expect=matrix(outsider=403, reviewer_a=405, reviewer_b=405, adjudicator=405, admin=405)),
        Case("login", expect=matrix(anonymous=200, outsider=302, reviewer_a=302, reviewer_b=302, adjudicator=302, admin=302)),
        Case("logout", method="post", expect=matrix(anonymous=302, outsider=302, reviewer_a=302, reviewer_b=302, adjudicator=302, admin=302)),
        # Outsiders get 403 from the role check before any object lookup.
        Case("annotations:image_bytes", kwargs={"image_id": image.pk}, expect=ALL_ROLES),
        Case("annotations:image_bytes", kwargs={"image_id": 999999}, expect=matrix(reviewer_a=404, reviewer_b=404, adjudicator=404, admin=404)),
    ]
