"""Permission cases for the dataset pages (annotations/datasets): admins only, like runs and exports;
adjudicators, reviewers and outsiders get 403, anonymous users the login page."""
from __future__ import annotations

from . import ADMIN_ONLY, Case, matrix
from tests.conftest import with_submission_token

ADMIN_NOT_FOUND = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_BAD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)
ADMIN_WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)
ADMIN_REDIRECT = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=302)


def setup(world):
    from annotations.datasets.models import DatasetBuild, DatasetVersion
    from annotations.models import Image

    image = Image.objects.create(vispr_id="2017_dataset_perm", split="test", vispr_split="test2017", vispr_labels=["a0_safe"],
                                 source="permission-test")
    version = DatasetVersion.objects.create(name="perm-version", recipe={"rules": []}, vispr_splits=["test2017"],
                                            rule_counts={"safe": 1})
    version.members.add(image)
    world["dataset_version"] = version
    world["dataset_build"] = DatasetBuild.objects.create(name="perm-version", status="finished", version=version, total=1, done=1)


def cases(world):
    build, version = {"build_id": world["dataset_build"].pk}, {"version_id": world["dataset_version"].pk}
    launch = with_submission_token({"source": "cprt-paper", "vispr_split": "", "seed": "0"})
    return [
        Case("datasets:versions", expect=ADMIN_ONLY),
        Case("datasets:versions", method="post", data={**launch, "name": "bad name!"}, expect=ADMIN_BAD),
        Case("datasets:versions", method="post", data={**launch, "name": "perm-version"}, expect=ADMIN_BAD),  # name taken
        Case("datasets:versions", method="put", expect=ADMIN_WRONG_METHOD),
        Case("datasets:preset", kwargs={"name": "cprt-paper"}, expect=ADMIN_ONLY),
        Case("datasets:preset", kwargs={"name": "no-such-preset"}, expect=ADMIN_NOT_FOUND),
        Case("datasets:preset", kwargs={"name": "cprt-paper"}, method="post", expect=ADMIN_WRONG_METHOD),
        Case("datasets:build", kwargs=build, expect=ADMIN_ONLY),
        Case("datasets:build", kwargs={"build_id": 999999}, expect=ADMIN_NOT_FOUND),
        Case("datasets:build", kwargs=build, method="post", expect=ADMIN_WRONG_METHOD),
        Case("datasets:build_progress", kwargs=build, expect=ADMIN_ONLY),
        Case("datasets:build_progress", kwargs={"build_id": 999999}, expect=ADMIN_NOT_FOUND),
        # cancel/resume of a finished build: refused with a message and a redirect, nothing changes
        Case("datasets:build_cancel", kwargs=build, method="post", expect=ADMIN_REDIRECT),
        Case("datasets:build_cancel", kwargs={"build_id": 999999}, method="post", expect=ADMIN_NOT_FOUND),
        Case("datasets:build_cancel", kwargs=build, expect=ADMIN_WRONG_METHOD),
        Case("datasets:build_resume", kwargs=build, method="post", expect=ADMIN_REDIRECT),
        Case("datasets:build_resume", kwargs=build, expect=ADMIN_WRONG_METHOD),
        Case("datasets:version", kwargs=version, expect=ADMIN_ONLY),
        Case("datasets:version", kwargs={"version_id": 999999}, expect=ADMIN_NOT_FOUND),
        Case("datasets:version", kwargs=version, method="post", expect=ADMIN_WRONG_METHOD),
        Case("datasets:version_batch", kwargs=version, method="post", data={"name": ""}, expect=ADMIN_BAD),
        Case("datasets:version_batch", kwargs={"version_id": 999999}, method="post", data={"name": "x"}, expect=ADMIN_NOT_FOUND),
        Case("datasets:version_batch", kwargs=version, expect=ADMIN_WRONG_METHOD),
    ]
