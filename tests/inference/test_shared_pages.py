"""The shared pages of issue 35: one provenance badge (demo / stand-in / real) wherever runs or model
answers are listed, and the small UX fixes (a cancelled run with every item done offers no Resume, a
reviewer gets a proper 403 page, the binary view's threshold box shows its value, the classifier
table's empty state says how to register one, a finished import offers its next steps)."""
from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from annotations.models import Annotator, Attribute, Label
from inference import runs
from inference.models import Run
from benchmarks.spy_bench.models import SpySet
from scoring.models import ImportJob
from tests.fakes.fixtures import *  # noqa: F401,F403

pytestmark = pytest.mark.django_db


def make_run(task="judge", **fields) -> Run:
    defaults = dict(task=task, provider="openai", model_name="gpt-5.1", strategy="taxonomy" if task == "judge" else "",
                    prompt_version="judge-v2", status=Run.STATUS_FINISHED, total=1, done=1)
    return Run.objects.create(**{**defaults, **fields})


def badge(obj) -> str:
    return Template("{% load provenance %}{% provenance obj %}").render(Context({"obj": obj}))


def test_provenance_is_demo_stand_in_or_real():
    assert make_run(selection={"demo": "seeded"}).provenance == "demo"
    assert make_run(request_params={"demo": True}, stand_in=True).provenance == "demo"  # demo wins: no model was called
    assert make_run(stand_in=True, endpoint="127.0.0.1:9").provenance == "stand-in"
    assert make_run().provenance == "real"


def test_the_tag_renders_one_badge_per_provenance():
    demo, stand_in, real = make_run(selection={"demo": "x"}), make_run(stand_in=True, endpoint="127.0.0.1:9"), make_run()
    assert 'data-provenance="demo"' in badge(demo) and ">demo</span>" in badge(demo)
    assert 'class="badge stand-in"' in badge(stand_in) and "127.0.0.1:9" in badge(stand_in)
    assert badge(real) == ""
    assert 'data-provenance="demo"' in badge({"run": demo}) and 'data-provenance="stand-in"' in badge({"stand_in": "yes"})
    assert badge("stand-in").count("stand-in</span>") == 1 and badge("<script>") == ""  # a plain value; anything else is real


@pytest.mark.parametrize("task, page", [
    ("judge", "inference:run_list"), ("judge", "inference:run_detail"), ("judge", "scoring:run"),
    ("multipriv-reid", "multipriv:leaderboard"), ("multipriv-reid", "multipriv:run"),
    ("spy-bench", "spy_bench:index"), ("spy-bench", "spy_bench:run"),
    ("binary", "classifiers:figures"), ("binary", "classifiers:leaderboard"),
])
def test_demo_runs_carry_the_badge_on_every_page_that_lists_them(task, page, client_as, admin_user):
    options = {}
    if task == "spy-bench":
        options = {"set": SpySet.objects.create(name="s", label2text={"a4_gender": "gender"}).pk, "distractors": False, "judge_model": ""}
    version = {"judge": "judge-v2", "multipriv-reid": "multipriv-reid-v1", "spy-bench": "spy-v1", "binary": "binary-v1"}[task]
    run = make_run(task, selection={"demo": "synthetic"}, options=options, prompt_version=version, total=0, done=0,
                   provider="onnx" if task == "binary" else "openai")
    args = [] if page in ("inference:run_list", "multipriv:leaderboard", "spy_bench:index", "classifiers:leaderboard") else [run.pk]
    response = client_as(admin_user).get(reverse(page, args=args))
    assert response.status_code == 200 and 'data-provenance="demo"' in response.content.decode()


def test_review_columns_badge_a_model_annotator_whose_labels_a_stand_in_wrote(client_as, adjudicator, make_image):
    image = make_image("2017_00000077")
    model = Annotator.for_model("openai", "gpt-5.1", "annotate-v2")
    make_run("annotate", annotator=model, stand_in=True, prompt_version="annotate-v2")
    attribute = Attribute.objects.order_by("pk").first()
    Label.objects.create(image=image, annotator=model, attribute=attribute, value=1)
    page = client_as(adjudicator).get(reverse("scoring:review", args=[image.pk])).content.decode()
    assert model.name in page and 'data-provenance="stand-in"' in page


def test_a_cancelled_run_with_every_item_done_offers_no_resume():
    done = make_run(status=Run.STATUS_CANCELLED, total=2, done=2)
    partial = make_run(status=Run.STATUS_CANCELLED, total=2, done=1)
    assert not runs.can_resume(done) and runs.can_resume(partial)


def test_a_reviewer_opening_scoring_gets_a_page_with_navigation_and_the_reason(client_as, reviewer_a):
    response = client_as(reviewer_a).get("/scoring/")
    text = response.content.decode()
    assert response.status_code == 403
    assert 'class="topbar"' in text and "Your role does not allow this page." in text and "reviewer" in text


def test_the_binary_views_threshold_box_shows_the_threshold_in_force(client_as, admin_user):
    client = client_as(admin_user)
    assert 'name="threshold" value="2"' in client.get(reverse("scoring:binary")).content.decode()
    assert 'name="threshold" value="3"' in client.get(reverse("scoring:binary") + "?threshold=3").content.decode()
    assert client.get(reverse("scoring:binary") + "?threshold=9").status_code == 400


def test_the_classifier_tables_empty_state_says_how_to_register_one(client_as, admin_user):
    page = client_as(admin_user).get(reverse("classifiers:list")).content.decode()
    assert 'id="no-classifiers"' in page and "manage.py register_classifier NAME FILE.onnx" in page and "?task=binary" in page


def test_a_finished_import_offers_its_next_steps(client_as, admin_user):
    job = ImportJob.objects.create(kind=ImportJob.KIND_VISPR, path="vispr", status="finished", total=1, done=1,
                                   result={"splits": {"test2017": "test"}, "added": 1, "attached": 0, "labels_updated": 0, "unchanged": 0,
                                           "skipped_count": 0, "vispr_labels": {"created": 1, "changed": 0}})
    page = client_as(admin_user).get(reverse("scoring:import", args=[job.pk])).content.decode()
    assert 'class="next-steps"' in page and "/?split=test" in page
    assert reverse("annotations:vispr_mapping") in page and reverse("datasets:versions") in page
    job.status = "running"
    job.save()
    assert 'class="next-steps"' not in client_as(admin_user).get(reverse("scoring:import", args=[job.pk])).content.decode()
