"""Permission cases for the VISPR attribute benchmark's pages (benchmarks/vispr_attributes): admins only, like every run page."""
from . import ADMIN_ONLY, Case, matrix

ADMIN_404 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_405 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)
ADMIN_400 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)


def setup(world):
    from inference.models import Run

    world["vpa_run"] = Run.objects.create(task="vispr-attributes", provider="openai", model_name="gpt-5.1", prompt_version="vpa-v1",
                                          status="finished", prompt_text={"attributes": [["a0_safe", "Safe"]]})


def cases(world):
    run, missing = {"run_id": world["vpa_run"].pk}, {"run_id": 999999}
    return [
        Case("vispr_attributes:leaderboard", expect=ADMIN_ONLY),
        Case("vispr_attributes:leaderboard", method="post", expect=ADMIN_405),
        Case("vispr_attributes:figures", kwargs=run, expect=ADMIN_ONLY),
        Case("vispr_attributes:figures", kwargs=run, query="format=json", expect=ADMIN_ONLY),
        Case("vispr_attributes:figures", kwargs=run, query="format=jsonl&download=predictions", expect=ADMIN_ONLY),
        Case("vispr_attributes:figures", kwargs=run, query="format=pdf", expect=ADMIN_400),
        Case("vispr_attributes:figures", kwargs=missing, expect=ADMIN_404),
        Case("vispr_attributes:figures", kwargs=run, method="post", expect=ADMIN_405),
    ]
