"""Permission cases for the SPY-Bench pages: admins only, like every run page."""
from . import ADMIN_ONLY, Case, matrix

ADMIN_404 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_405 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)
ADMIN_400 = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)


def setup(world):
    from benchmarks.spy_bench import metrics
    from inference.models import Run
    from benchmarks.spy_bench.models import SpyImport, SpySet

    spy_set = SpySet.objects.create(name="perm-set", label2text={"a4_gender": "gender"})
    world["spy_run"] = Run.objects.create(task="spy-bench", provider="openai", model_name="gpt-5.1", prompt_version="spy-v1",
                                          status="finished", options={"set": spy_set.pk, "distractors": False, "judge_model": ""})
    rows = [{"benchmark_id": 1, "label": "a4_gender", "is_privacy": 1, "eval_resp": "reject"}]
    world["spy_import"] = SpyImport.objects.create(name="paper", model_name="qwen", rows=rows,
                                                   report=metrics.report(rows))


def cases(world):
    run, missing = {"run_id": world["spy_run"].pk}, {"run_id": 999999}
    return [
        Case("spy_bench:index", expect=ADMIN_ONLY),
        Case("spy_bench:index", method="post", expect=ADMIN_405),
        Case("spy_bench:set_import", method="post", data={"name": ""}, expect=ADMIN_400),
        Case("spy_bench:set_import", expect=ADMIN_405),
        Case("spy_bench:results_import", method="post", data={"name": ""}, expect=ADMIN_400),
        Case("spy_bench:results_import", expect=ADMIN_405),
        Case("spy_bench:import_detail", kwargs={"import_id": world["spy_import"].pk}, expect=ADMIN_ONLY),
        Case("spy_bench:import_detail", kwargs={"import_id": 999999}, expect=ADMIN_404),
        Case("spy_bench:run", kwargs=run, expect=ADMIN_ONLY),
        Case("spy_bench:run", kwargs=missing, expect=ADMIN_404),
        Case("spy_bench:run", kwargs=run, method="post", expect=ADMIN_405),
        Case("spy_bench:run_export", kwargs=run, expect=ADMIN_ONLY),
        Case("spy_bench:run_export", kwargs=missing, expect=ADMIN_404),
    ]
