"""Permission cases for the local classifiers (issue 26; a benchmark folder since issue 35): the classifiers
list (admins), CPRT's binary private/public view, the benchmark's leaderboard and a classifier run's
figures page (adjudicators and admins, like every scoring page)."""
from __future__ import annotations

from . import ADMIN_ONLY, STAFF_ONLY, Case, matrix
from .scoring import add_results, make_images, make_run

BAD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=400, admin=400)
NOT_FOUND = matrix(reviewer_a=403, reviewer_b=403, adjudicator=404, admin=404)
REDIRECT = matrix(reviewer_a=403, reviewer_b=403, adjudicator=302, admin=302)
WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=405, admin=405)
ADMIN_WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)


def setup(world):
    images = make_images(4, prefix="2017_26")
    run = make_run(task="binary", provider="onnx", model="tiny-s2p")
    add_results(run, [(images[0], "ok", 0.9), (images[1], "ok", 0.2), (images[2], "ok", 0.6), (images[3], "error", None)])
    run.save()
    world["binary_run"] = run


def cases(world):
    run = {"run_id": world["binary_run"].pk}
    judge = {"run_id": world["judge_run"].pk}  # set up by the scoring module (every setup runs before any cases)
    return [
        Case("classifiers:list", expect=ADMIN_ONLY),
        Case("classifiers:list", method="post", data={}, expect=ADMIN_WRONG_METHOD),
        Case("scoring:binary", expect=STAFF_ONLY),
        Case("scoring:binary", query="threshold=3&format=json", expect=STAFF_ONLY),
        Case("scoring:binary", query="format=csv&table=judges", expect=STAFF_ONLY),
        Case("scoring:binary", query="format=csv&table=classifiers", expect=BAD),  # CPRT's view lists judge runs only
        Case("scoring:binary", query="threshold=7", expect=BAD),
        Case("scoring:binary", query="format=csv&table=nope", expect=BAD),
        Case("scoring:binary", method="post", data={}, expect=WRONG_METHOD),
        Case("classifiers:leaderboard", expect=STAFF_ONLY),
        Case("classifiers:leaderboard", query="threshold=3&format=json", expect=STAFF_ONLY),
        Case("classifiers:leaderboard", query="format=csv&table=classifiers", expect=STAFF_ONLY),
        Case("classifiers:leaderboard", query="threshold=7", expect=BAD),
        Case("classifiers:leaderboard", method="post", data={}, expect=WRONG_METHOD),
        Case("classifiers:figures", kwargs=run, expect=STAFF_ONLY),
        Case("classifiers:figures", kwargs=run, query="format=json", expect=STAFF_ONLY),
        Case("classifiers:figures", kwargs=run, query="threshold=0", expect=BAD),
        Case("classifiers:figures", kwargs={"run_id": 999999}, expect=NOT_FOUND),
        Case("classifiers:figures", kwargs=judge, expect=REDIRECT),
        Case("scoring:run", kwargs=run, expect=REDIRECT),
    ]
