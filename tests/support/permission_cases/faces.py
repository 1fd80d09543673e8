"""Permission cases for the face-anonymization pages (annotations/faces): adjudicators and admins only,
like the other review pages (the three-way comparison too); reviewers and outsiders get 403, anonymous users the login page."""
from __future__ import annotations

from . import STAFF_ONLY, Case, matrix
from tests.conftest import with_submission_token

NOT_FOUND = matrix(reviewer_a=403, reviewer_b=403, adjudicator=404, admin=404)
BAD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=400, admin=400)
WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=405, admin=405)
REDIRECT = matrix(reviewer_a=403, reviewer_b=403, adjudicator=302, admin=302)


def _api(status: int) -> dict:
    """The REST API (/api/anonymizations/): 401 without a login, 403 for reviewers, `status` for staff. The
    matrix posts form-encoded bodies, which the JSON-only API answers with 415 once role and object pass."""
    return matrix(anonymous=401, reviewer_a=403, reviewer_b=403, adjudicator=status, admin=status)


def setup(world):
    from annotations.faces.models import AnonymizationJob, FaceVariant
    from annotations.images import attach, clean_image
    from annotations.models import Image
    from tests.conftest import png_bytes

    image = Image(vispr_id="2017_faces_perm", split="test", source="test")
    attach(image, clean_image(png_bytes(color=(10, 20, 30))))
    image.save()
    job = AnonymizationJob.objects.create(image_ids=[image.pk], total=1, status="finished", done=1)
    variant = FaceVariant(image=image, job=job, detector="test", boxes=[], faces=0)
    attach(variant, clean_image(png_bytes(color=(10, 20, 31))))
    variant.save()
    world["faces_job"], world["faces_variant"] = job, variant


def cases(world):
    job, variant = {"job_id": world["faces_job"].pk}, {"variant_id": world["faces_variant"].pk}
    # cancel/resume of a finished job with nothing left: answered with a message and a redirect, nothing changes
    return [
        Case("faces:jobs", expect=STAFF_ONLY),
        Case("faces:jobs", method="post", data=with_submission_token({"split": "test", "method": "smudge", "threshold": "0.5", "margin": "0.2"}),
             expect=BAD),
        Case("faces:jobs", method="post", data=with_submission_token({"split": "", "method": "blur", "threshold": "2", "margin": "0.2"}),
             expect=BAD),
        Case("faces:jobs", method="put", expect=WRONG_METHOD),
        Case("faces:job", kwargs=job, expect=STAFF_ONLY),
        Case("faces:job", kwargs={"job_id": 999999}, expect=NOT_FOUND),
        Case("faces:job", kwargs=job, method="post", expect=WRONG_METHOD),
        Case("faces:job_progress", kwargs=job, expect=STAFF_ONLY),
        Case("faces:job_progress", kwargs={"job_id": 999999}, expect=NOT_FOUND),
        Case("faces:job_cancel", kwargs=job, method="post", expect=REDIRECT),
        Case("faces:job_cancel", kwargs={"job_id": 999999}, method="post", expect=NOT_FOUND),
        Case("faces:job_cancel", kwargs=job, expect=WRONG_METHOD),
        Case("faces:job_resume", kwargs=job, method="post", expect=REDIRECT),
        Case("faces:job_resume", kwargs=job, expect=WRONG_METHOD),
        Case("faces:variant", kwargs=variant, expect=STAFF_ONLY),
        Case("faces:variant", kwargs={"variant_id": 999999}, expect=NOT_FOUND),
        Case("faces:variant", kwargs=variant, method="post", expect=WRONG_METHOD),
        Case("faces:variant_bytes", kwargs=variant, expect=STAFF_ONLY),
        Case("faces:variant_bytes", kwargs={"variant_id": 999999}, expect=NOT_FOUND),
        Case("faces:variant_bytes", kwargs=variant, method="post", expect=WRONG_METHOD),
        Case("api:anonymization-list", expect=_api(200)),
        Case("api:anonymization-list", query="page=0", expect=_api(400)),
        Case("api:anonymization-list", method="post", expect=_api(415)),
        Case("api:anonymization-list", method="put", expect=_api(405)),
        Case("api:anonymization-detail", kwargs=job, expect=_api(200)),
        Case("api:anonymization-detail", kwargs={"job_id": 999999}, expect=_api(404)),
        Case("api:anonymization-detail", kwargs=job, method="post", expect=_api(405)),
        Case("api:anonymization-cancel", kwargs=job, method="post", expect=_api(415)),
        Case("api:anonymization-cancel", kwargs={"job_id": 999999}, method="post", expect=_api(404)),
        Case("api:anonymization-cancel", kwargs=job, expect=_api(405)),
        Case("api:anonymization-resume", kwargs=job, method="post", expect=_api(415)),
        Case("api:anonymization-resume", kwargs={"job_id": 999999}, method="post", expect=_api(404)),
        Case("api:anonymization-resume", kwargs=job, expect=_api(405)),
        Case("scoring:three_way", expect=STAFF_ONLY),
        Case("scoring:three_way", query="original=abc", expect=BAD),
        Case("scoring:three_way", query="format=json", expect=BAD),
        Case("scoring:three_way", query="original=999999&prompt=999998&pixel=999997", expect=BAD),
        Case("scoring:three_way", method="post", expect=WRONG_METHOD),
    ]
