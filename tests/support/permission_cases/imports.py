"""Permission cases for the VISPR mapping page (every role) and the import pages (admins only):
a finished import, so that Cancel and Resume are refused with a message and nothing changes."""
from . import ALL_ROLES, Case, matrix
from tests.conftest import with_submission_token

ADMIN_ONLY = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403)
ADMIN_BAD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)
ADMIN_NOT_FOUND = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)
ADMIN_REDIRECT = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=302)
ROLES_405 = matrix(reviewer_a=405, reviewer_b=405, adjudicator=405, admin=405)


def setup(world):
    from scoring.models import ImportJob

    world["finished_import"] = ImportJob.objects.create(kind="vispr", path="vispr", status="finished", done=3, total=3,
                                                        result={"splits": {"test2017": "test"}, "added": 3}, created_by=world["admin"])


def cases(world):
    finished = {"job_id": world["finished_import"].pk}
    missing = {"job_id": 999999}
    return [
        Case("annotations:vispr_mapping", expect=ALL_ROLES),
        Case("annotations:vispr_mapping", method="post", expect=ROLES_405),
        Case("scoring:imports", expect=ADMIN_ONLY),
        Case("scoring:imports", method="post", data=with_submission_token({"kind": "vispr", "path": "../../etc", "split": "test"}), expect=ADMIN_BAD),
        Case("scoring:imports", method="put", expect=ADMIN_WRONG_METHOD),
        Case("scoring:import", kwargs=finished, expect=ADMIN_ONLY),
        Case("scoring:import", kwargs=missing, expect=ADMIN_NOT_FOUND),
        Case("scoring:import", kwargs=finished, method="post", expect=ADMIN_WRONG_METHOD),
        Case("scoring:import_progress", kwargs=finished, expect=ADMIN_ONLY),
        Case("scoring:import_progress", kwargs=missing, expect=ADMIN_NOT_FOUND),
        Case("scoring:import_cancel", kwargs=finished, method="post", expect=ADMIN_REDIRECT),
        Case("scoring:import_cancel", kwargs=missing, method="post", expect=ADMIN_NOT_FOUND),
        Case("scoring:import_cancel", kwargs=finished, expect=ADMIN_WRONG_METHOD),
        Case("scoring:import_resume", kwargs=finished, method="post", expect=ADMIN_REDIRECT),
        Case("scoring:import_resume", kwargs=missing, method="post", expect=ADMIN_NOT_FOUND),
        Case("scoring:import_resume", kwargs=finished, expect=ADMIN_WRONG_METHOD),
    ]
