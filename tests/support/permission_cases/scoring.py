"""Permission cases for the scoring pages, and the small data builders the scoring tests share.

Every scoring page is for adjudicators and admins (scoring/access.py): reviewers get 403 because the
pages show model outputs and other annotators' labels, outsiders 403, anonymous users the login page.
The export pages are for admins only: adjudicators get 403 there too.
"""
from __future__ import annotations

from . import ADMIN_ONLY, STAFF_ONLY, Case, matrix
from tests.conftest import with_submission_token

NOT_FOUND = matrix(reviewer_a=403, reviewer_b=403, adjudicator=404, admin=404)
BAD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=400, admin=400)
WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=405, admin=405)
ADMIN_NOT_FOUND = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=404)
ADMIN_BAD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=400)
ADMIN_WRONG_METHOD = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=405)
ADMIN_REDIRECT = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403, admin=302)


# ---------------------------------------------------------------------------------------------
# Builders (no provider code: rows are written directly)


def make_run(*, task="judge", strategy="zero_shot", cf=False, status="finished", model="gpt-test", provider="openai", **extra):
    from inference.models import Run

    return Run.objects.create(
        task=task, provider=provider, model_name=model, strategy=strategy if task == "judge" else "",
        counterfactual_faces=cf, prompt_version="judge-v1", status=status,
        prompt_text={"system": f"Rate privacy severity ({strategy}{', faces anonymised' if cf else ''})."}, **extra,
    )


def add_results(run, rows):
    """rows: iterable of (image, outcome, score)."""
    from inference.models import RunResult

    RunResult.objects.bulk_create([RunResult(run=run, item_id=image.pk, image=image, outcome=o, score=s) for image, o, s in rows])
    run.image_ids = run.item_ids = [image.pk for image, _, _ in rows]
    run.total_images = len(run.image_ids)
    run.save(update_fields=["image_ids", "item_ids", "total"])


def make_images(n: int, prefix: str = "2017_9", with_published: bool = True, split: str = "test"):
    """n images without files; published level/score spread over the four levels."""
    from annotations.models import Image
    from scoring import engine

    images = []
    for i in range(n):
        level = 1 + i % 4
        counts = [0, 0, 0, 0]
        counts[level - 1] = 1 + (i // 4) % 2
        lv, score = engine.severity(counts)
        images.append(Image(vispr_id=f"{prefix}{i:05d}", split=split, source="scoring-test",
                            published_level=lv if with_published else None, published_score=round(score, 6) if with_published else None))
    Image.objects.bulk_create(images)
    return list(Image.objects.filter(vispr_id__startswith=prefix).order_by("vispr_id"))


def label_everything(images, annotator, values_of):
    """values_of(index, key) -> label value for every image and attribute."""
    from annotations import label_version, taxonomy
    from annotations.models import Label

    ids = taxonomy.attribute_ids()
    Label.objects.bulk_create(
        [Label(image=image, annotator=annotator, attribute_id=ids[k], value=values_of(i, k), rationale=f"{k} seen" if values_of(i, k) else "")
         for i, image in enumerate(images) for k in ids]
    )
    label_version.bump([annotator.pk])  # written past the label-writing API: count it as that API would


def submit(image, annotator):
    from annotations import label_version
    from annotations.models import Labeling

    Labeling.objects.update_or_create(image=image, annotator=annotator, defaults={"status": Labeling.STATUS_SUBMITTED})
    label_version.bump([annotator.pk])


# ---------------------------------------------------------------------------------------------


def setup(world):
    from annotations.models import Annotator

    images = make_images(3, prefix="2017_77")
    world["scoring_images"] = images
    base = make_run()
    add_results(base, [(images[0], "ok", 0.9), (images[1], "ok", 0.4), (images[2], "refused", None)])
    cf = make_run(cf=True)
    add_results(cf, [(images[0], "ok", 0.3), (images[1], "ok", 0.35), (images[2], "ok", 0.1)])
    world["judge_run"], world["cf_run"] = base, cf
    gpt = Annotator.for_model("openai", "gpt-5.1", "annotate-v1")
    human = Annotator.for_user(world["reviewer_a"])
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gov_ids" else 0.0)
    label_everything(images, human, lambda i, k: 0.0)
    for image in images:
        submit(image, human)
    world["annotate_run"] = make_run(task="annotate", annotator=gpt)
    world["finished_export"], world["queued_export"] = make_export_jobs(world["admin"])


def make_export_jobs(admin):
    """A finished zip export with its (tiny) file under CPRT_EXPORT_ROOT, and a queued one."""
    import zipfile

    from django.conf import settings

    from scoring.models import ExportJob, ScoringProfile

    profile = ScoringProfile.active()
    finished = ExportJob.objects.create(created_by=admin, splits=["test"], profile=profile, status=ExportJob.STATUS_FINISHED, done=3, total=3)
    folder = settings.CPRT_EXPORT_ROOT / str(finished.pk)
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / finished.download_name, "w") as archive:
        archive.writestr("README.md", "permission matrix export\n")
    finished.zip_path = f"{finished.pk}/{finished.download_name}"
    finished.save(update_fields=["zip_path"])
    queued = ExportJob.objects.create(created_by=admin, splits=["test"], profile=profile)
    return finished, queued


def cases(world):
    run, cf, image = world["judge_run"], world["cf_run"], world["scoring_images"][0]
    annotate = world["annotate_run"]
    review = {"image_id": image.pk}
    post_ok = matrix(reviewer_a=403, reviewer_b=403, adjudicator=302, admin=302)
    finished, queued = {"job_id": world["finished_export"].pk}, {"job_id": world["queued_export"].pk}
    profile_pk = world["finished_export"].profile_id
    return [
        Case("scoring:leaderboard", expect=STAFF_ONLY),
        Case("scoring:leaderboard", query="format=json", expect=STAFF_ONLY),
        Case("scoring:leaderboard", query="format=csv&table=leaderboard", expect=STAFF_ONLY),
        Case("scoring:leaderboard", query="floor=120", expect=BAD),
        Case("scoring:leaderboard", query="version=abc", expect=BAD),
        Case("scoring:leaderboard", query="version=999999", expect=BAD),
        Case("scoring:leaderboard", query="split=holdout", expect=BAD),
        Case("scoring:leaderboard", query="split=test&format=csv&table=ablations", expect=STAFF_ONLY),
        Case("scoring:compare", query=f"a={run.pk}&b={cf.pk}&adjust=bh", expect=STAFF_ONLY),
        Case("scoring:compare", query=f"a={run.pk}&b={cf.pk}&adjust=bonferroni", expect=BAD),
        Case("scoring:compare", expect=STAFF_ONLY),
        Case("scoring:compare", query=f"a={run.pk}&b={cf.pk}", expect=STAFF_ONLY),
        Case("scoring:compare", query=f"a={run.pk}&b={run.pk}", expect=BAD),
        Case("scoring:compare", query=f"a={run.pk}&b={annotate.pk}", expect=BAD),
        Case("scoring:compare", method="post", expect=WRONG_METHOD),
        Case("scoring:calibration", kwargs={"run_id": annotate.pk}, expect=STAFF_ONLY),
        Case("scoring:calibration", kwargs={"run_id": annotate.pk}, query="sort=nope", expect=BAD),
        Case("scoring:calibration", kwargs={"run_id": annotate.pk}, query="adjust=nope", expect=BAD),
        Case("scoring:calibration", kwargs={"run_id": run.pk}, expect=NOT_FOUND),
        Case("scoring:calibration", kwargs={"run_id": annotate.pk}, method="post", expect=WRONG_METHOD),
        Case("scoring:leaderboard", query="strategy=bogus", expect=BAD),
        Case("scoring:leaderboard", method="post", expect=WRONG_METHOD),
        Case("scoring:run", kwargs={"run_id": run.pk}, expect=STAFF_ONLY),
        Case("scoring:run", kwargs={"run_id": run.pk}, query="threshold=3&format=csv&table=binary", expect=STAFF_ONLY),
        Case("scoring:run", kwargs={"run_id": run.pk}, query="threshold=9", expect=BAD),
        Case("scoring:run", kwargs={"run_id": annotate.pk}, expect=STAFF_ONLY),
        Case("scoring:run", kwargs={"run_id": 999999}, expect=NOT_FOUND),
        Case("scoring:run", kwargs={"run_id": run.pk}, method="post", expect=WRONG_METHOD),
        Case("scoring:agreement", expect=STAFF_ONLY),
        Case("scoring:agreement", query="format=json", expect=STAFF_ONLY),
        Case("scoring:agreement", query="split=nowhere", expect=BAD),
        Case("scoring:agreement", method="post", expect=WRONG_METHOD),
        Case("scoring:disagreements", expect=STAFF_ONLY),
        Case("scoring:disagreements", query="attribute=not_an_attribute", expect=BAD),
        Case("scoring:disagreements", method="post", expect=WRONG_METHOD),
        Case("scoring:review", kwargs=review, expect=STAFF_ONLY),
        Case("scoring:review", kwargs={"image_id": 999999}, expect=NOT_FOUND),
        Case("scoring:review", kwargs=review, query="queue=refresh", expect=STAFF_ONLY),
        Case("scoring:review", kwargs=review, method="post", expect=WRONG_METHOD),
        Case("scoring:adjudicate", kwargs=review, method="post", data={"attribute": "gov_ids", "value": "1", "note": "seen"}, expect=post_ok),
        Case("scoring:adjudicate", kwargs=review, method="post", data={"attribute": "gov_ids", "value": "2"}, expect=BAD),
        Case("scoring:adjudicate", kwargs={"image_id": 999999}, method="post", data={"attribute": "gov_ids", "value": "1"}, expect=NOT_FOUND),
        Case("scoring:adjudicate", kwargs=review, expect=WRONG_METHOD),
        Case("scoring:counterfactual", expect=STAFF_ONLY),
        Case("scoring:counterfactual", query=f"base={run.pk}&cf={cf.pk}", expect=STAFF_ONLY),
        Case("scoring:counterfactual", query=f"base={cf.pk}&cf={run.pk}", expect=BAD),
        Case("scoring:counterfactual", query=f"base={run.pk}&cf={cf.pk}&format=csv&table=summary", expect=STAFF_ONLY),
        Case("scoring:counterfactual", method="post", expect=WRONG_METHOD),
        Case("scoring:exports", expect=ADMIN_ONLY),
        Case("scoring:exports", method="post", data=with_submission_token({"splits": ["test"], "profile": profile_pk, "destination": "zip"}),
             expect=ADMIN_REDIRECT),
        Case("scoring:exports", method="post", data=with_submission_token({"splits": ["validation"], "profile": profile_pk, "destination": "zip"}),
             expect=ADMIN_BAD),
        Case("scoring:exports", method="put", expect=ADMIN_WRONG_METHOD),
        Case("scoring:export_sft", method="post", data=with_submission_token({"sft-format": "hf", "sft-split": "test", "sft-profile": profile_pk}),
             expect=ADMIN_BAD),
        Case("scoring:export_sft", expect=ADMIN_WRONG_METHOD),
        Case("scoring:export", kwargs=finished, expect=ADMIN_ONLY),
        Case("scoring:export", kwargs=queued, expect=ADMIN_ONLY),
        Case("scoring:export", kwargs={"job_id": 999999}, expect=ADMIN_NOT_FOUND),
        Case("scoring:export", kwargs=finished, method="post", expect=ADMIN_WRONG_METHOD),
        Case("scoring:export_progress", kwargs=queued, expect=ADMIN_ONLY),
        Case("scoring:export_progress", kwargs={"job_id": 999999}, expect=ADMIN_NOT_FOUND),
        # cancel/resume of a finished export: refused with a message and a redirect, nothing changes
        Case("scoring:export_cancel", kwargs=finished, method="post", expect=ADMIN_REDIRECT),
        Case("scoring:export_cancel", kwargs={"job_id": 999999}, method="post", expect=ADMIN_NOT_FOUND),
        Case("scoring:export_cancel", kwargs=finished, expect=ADMIN_WRONG_METHOD),
        Case("scoring:export_resume", kwargs=finished, method="post", expect=ADMIN_REDIRECT),
        Case("scoring:export_resume", kwargs={"job_id": 999999}, method="post", expect=ADMIN_NOT_FOUND),
        Case("scoring:export_resume", kwargs=finished, expect=ADMIN_WRONG_METHOD),
        Case("scoring:export_download", kwargs=finished, expect=ADMIN_ONLY),
        Case("scoring:export_download", kwargs=queued, expect=ADMIN_NOT_FOUND),
        Case("scoring:export_download", kwargs={"job_id": 999999}, expect=ADMIN_NOT_FOUND),
        Case("scoring:export_download", kwargs=finished, method="post", expect=ADMIN_WRONG_METHOD),
    ]
