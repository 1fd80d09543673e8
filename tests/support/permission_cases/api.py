"""Permission cases for the REST API (/api/): anonymous 401, no role 403, then per object type as on the pages.

The labeling belongs to reviewer_a. The matrix sends form-encoded bodies, which the API (JSON only)
answers with 415 once the caller has passed the role and object checks: that is the "allowed" cell
for write endpoints here; tests/cross/test_api.py covers their success paths with JSON.
Until cprt_site/urls.py includes the API, `cases` returns nothing (the names do not resolve yet).
"""

from . import Case, matrix

API_ALL = matrix(anonymous=401)
API_STAFF = matrix(anonymous=401, reviewer_a=403, reviewer_b=403)
API_ADMIN = matrix(anonymous=401, reviewer_a=403, reviewer_b=403, adjudicator=403)


def _roles(status: int) -> dict:
    return matrix(anonymous=401, reviewer_a=status, reviewer_b=status, adjudicator=status, admin=status)


def _owner_only(status: int) -> dict:
    return matrix(anonymous=401, reviewer_a=status, reviewer_b=404, adjudicator=404, admin=404)


def _staff(status: int) -> dict:
    return matrix(anonymous=401, reviewer_a=403, reviewer_b=403, adjudicator=status, admin=status)


def _admin(status: int) -> dict:
    return matrix(anonymous=401, reviewer_a=403, reviewer_b=403, adjudicator=403, admin=status)


def setup(world):
    from annotations.images import attach, clean_image
    from annotations.models import Annotator, Image, Labeling
    from inference.models import Run
    from tests.conftest import png_bytes

    # In the batch with model suggestions on (permission_cases/annotations.py sets it up and its suggester's labels).
    from .annotations import suggestion_batch

    image = Image(vispr_id="perm_api_image", split="test", source="permission-test", batch=suggestion_batch(world))
    attach(image, clean_image(png_bytes(color=(9, 8, 7))))
    image.save()
    _suggest(image)
    world["api_labeling"] = Labeling.objects.create(image=image, annotator=Annotator.for_user(world["reviewer_a"]))
    world["api_judge_run"] = Run.objects.create(task="judge", provider="openai", model_name="gpt-api", strategy="zero_shot",
                                                prompt_version="judge-v1", status="finished")
    from annotations.datasets.models import DatasetBuild
    from scoring.models import ExportJob, ImportJob, ScoringProfile

    world["api_export"] = ExportJob.objects.create(splits=["test"], profile=ScoringProfile.active(), status="running")
    world["api_import"] = ImportJob.objects.create(kind="vispr", path="vispr", status="finished")
    world["api_build"] = DatasetBuild.objects.create(name="api-perm-build", status="finished")
    world["api_annotate_run"] = Run.objects.create(task="annotate", provider="openai", model_name="gpt-api",
                                                   prompt_version="annotate-v1", status="finished")


def _suggest(image):
    from annotations import taxonomy
    from annotations.models import Annotator, Label

    from .annotations import SUGGESTER

    suggester = Annotator.for_model(*SUGGESTER)
    Label.objects.bulk_create([Label(image=image, annotator=suggester, attribute_id=pk, value=1.0, rationale="suggested")
                               for pk in taxonomy.attribute_ids().values()])


def cases(world):
    labeling = {"labeling_id": world["api_labeling"].pk}
    image = {"image_id": world["api_labeling"].image_id}
    run = {"run_id": world["api_judge_run"].pk}
    annotate = {"run_id": world["api_annotate_run"].pk}
    missing_run = {"run_id": 999999}
    return [
        Case("api:image-list", expect=API_ALL),
        Case("api:image-list", query="level=7", expect=_roles(400)),
        # Consensus filters: a reviewer filters only among the images they have submitted (the blind column).
        *[Case("api:image-list", query=f"level={n}", expect=API_ALL) for n in (1, 2, 3, 4)],
        Case("api:image-list", method="post", expect=_roles(405)),
        Case("api:image-detail", kwargs=image, expect=API_ALL),
        Case("api:image-detail", kwargs={"image_id": 999999}, expect=_roles(404)),
        Case("api:image-detail", kwargs=image, method="delete", expect=_roles(405)),
        Case("api:labeling-list", expect=API_ALL),
        Case("api:labeling-list", method="post", expect=_roles(415)),
        Case("api:labeling-list", method="delete", expect=_roles(405)),
        Case("api:labeling-detail", kwargs=labeling, expect=_owner_only(200)),
        Case("api:labeling-detail", kwargs={"labeling_id": 999999}, expect=_roles(404)),
        Case("api:labeling-detail", kwargs=labeling, method="put", expect=_owner_only(415)),
        Case("api:labeling-detail", kwargs=labeling, method="post", expect=_roles(405)),
        Case("api:labeling-submit", kwargs=labeling, method="post", expect=_owner_only(415)),
        Case("api:labeling-submit", kwargs=labeling, expect=_roles(405)),
        Case("api:labeling-skip", kwargs=labeling, method="post", expect=_owner_only(415)),
        Case("api:labeling-skip", kwargs=labeling, expect=_roles(405)),
        Case("api:run-list", expect=API_ADMIN),
        Case("api:run-list", method="post", expect=_admin(415)),
        Case("api:run-list", method="put", expect=_admin(405)),
        Case("api:run-detail", kwargs=run, expect=API_ADMIN),
        Case("api:run-detail", kwargs=missing_run, expect=_admin(404)),
        Case("api:run-detail", kwargs=run, method="post", expect=_admin(405)),
        Case("api:run-cancel", kwargs=run, method="post", expect=_admin(415)),
        Case("api:run-cancel", kwargs=missing_run, method="post", expect=_admin(404)),
        Case("api:run-cancel", kwargs=run, expect=_admin(405)),
        Case("api:run-resume", kwargs=run, method="post", expect=_admin(415)),
        Case("api:run-resume", kwargs=missing_run, method="post", expect=_admin(404)),
        Case("api:run-resume", kwargs=run, expect=_admin(405)),
        Case("api:run-retry-failed", kwargs=run, method="post", expect=_admin(415)),
        Case("api:run-retry-failed", kwargs=missing_run, method="post", expect=_admin(404)),
        Case("api:run-retry-failed", kwargs=run, expect=_admin(405)),
        *[case for name, key, obj in (("export", "job_id", "api_export"), ("import", "job_id", "api_import"),
                                      ("dataset", "build_id", "api_build"))
          for case in (
              Case(f"api:{name}-list", expect=API_ADMIN),
              Case(f"api:{name}-list", method="post", expect=_admin(415)),
              Case(f"api:{name}-list", method="put", expect=_admin(405)),
              Case(f"api:{name}-detail", kwargs={key: world[obj].pk}, expect=API_ADMIN),
              Case(f"api:{name}-detail", kwargs={key: 999999}, expect=_admin(404)),
              Case(f"api:{name}-detail", kwargs={key: world[obj].pk}, method="post", expect=_admin(405)),
          )],
        Case("api:export-download", kwargs={"job_id": world["api_export"].pk}, expect=_admin(404)),  # not finished: no file
        Case("api:export-download", kwargs={"job_id": 999999}, expect=_admin(404)),
        Case("api:export-download", kwargs={"job_id": world["api_export"].pk}, method="post", expect=_admin(405)),
        Case("api:metrics-list", expect=API_STAFF),
        Case("api:metrics-list", query="strategy=bogus", expect=_staff(400)),
        Case("api:metrics-list", method="post", expect=_staff(405)),
        Case("api:run-metrics", kwargs=run, expect=API_STAFF),
        Case("api:run-metrics", kwargs=annotate, expect=_staff(409)),
        Case("api:run-metrics", kwargs=missing_run, expect=_staff(404)),
        Case("api:run-metrics", kwargs=run, method="post", expect=_staff(405)),
        Case("api:agreement", expect=API_STAFF),
        Case("api:agreement", query="split=bogus", expect=_staff(400)),
        Case("api:agreement", method="post", expect=_staff(405)),
        Case("api:index", expect=API_ALL),
        Case("api:index", query="x=1", expect=_roles(400)),
        Case("api:index", method="post", expect=_roles(405)),
        Case("api:schema", expect=API_ALL),
        Case("api:schema", method="post", expect=_roles(405)),
        Case("api:docs", expect=API_ALL),
        Case("api:docs", method="post", expect=_roles(405)),
    ]
