"""The benchmark's pages: the leaderboard (runs on one comparison set, provenance badge), a run's
figures (HTML, JSON, the predictions download, bad formats refused), who may see them, and the
Benchmarks page that lists it from the registry with its data status and next step."""
from __future__ import annotations

import pytest
from django.urls import reverse

from inference.models import Run, RunResult
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.conftest import with_submission_token

LEADERBOARD = "/benchmarks/vispr-attributes/"


def make_run(images, answers: dict, **fields) -> Run:
    """A finished run over `images` with these answers (vispr_id -> {id: p} or None for a refusal)."""
    run = Run.objects.create(task="vispr-attributes", provider="openai", model_name=fields.pop("model", "m"), prompt_version="vpa-v1",
                             prompt_text={"attributes": [["a0_safe", "Safe"], ["a4_gender", "Gender"]]}, status=Run.STATUS_FINISHED,
                             image_ids=[i.pk for i in images], item_ids=[i.pk for i in images], total=len(images), **fields)
    for image in images:
        p = answers[image.vispr_id]
        if p is None:
            RunResult.objects.create(run=run, item_id=image.pk, image=image, outcome="refused", error="refused: no")
        else:
            RunResult.objects.create(run=run, item_id=image.pk, image=image, outcome="ok", raw={"answer": {"p": p, "omitted": []}})
    return run


@pytest.fixture
def labelled(make_image):
    images = [make_image(f"2017_{i}", color=(i, 2 * i, 3 * i)) for i in range(1, 5)]
    for image, labels in zip(images, (["a4_gender"], ["a0_safe"], ["a4_gender"], ["a0_safe"])):
        image.vispr_split, image.vispr_labels = "test2017", labels
        image.save()
    return images


def answers(gender_p):
    return {f"2017_{i}": {"a0_safe": 1 - g, "a4_gender": g} for i, g in enumerate(gender_p, 1)}


def test_figures_html_json_and_download_for_admins(labelled, client_as, admin_user):
    run = make_run(labelled, {**answers([0.9, 0.2, 0.6, 0.1]), "2017_4": None}, selection={"demo": "made here"})
    client = client_as(admin_user)
    url = reverse("vispr_attributes:figures", args=[run.pk])
    page = client.get(url).content.decode()
    assert "cmAP" in page and 'data-provenance="demo"' in page and ">demo<" in page
    assert "3 of 4 images have a prediction" in page
    data = client.get(url + "?format=json").json()
    assert data["cmap"] == 1.0 and data["per_attribute"][1]["description"] == "Gender"
    assert [(r["attribute"], r["ap"], r["positives"]) for r in data["per_attribute"]] == [("a0_safe", 1.0, 1), ("a4_gender", 1.0, 2)]
    assert data["provenance"] == "demo" and data["coverage"] == 0.75


@pytest.mark.parametrize("query, message", [
    ("?format=xml", "Unknown format 'xml'"),
    ("?format=json&download=predictions", "The predictions download is ?format=jsonl&download=predictions."),
    ("?format=jsonl", "The predictions download is ?format=jsonl&download=predictions."),
    ("?download=everything", "The predictions download is"),
])
def test_a_bad_format_is_refused_with_a_message(labelled, client_as, admin_user, query, message):
    run = make_run(labelled, answers([0.9, 0.2, 0.6, 0.1]))
    response = client_as(admin_user).get(reverse("vispr_attributes:figures", args=[run.pk]) + query)
    assert response.status_code == 400 and message in response.content.decode()


def test_who_may_see_the_pages(labelled, client_as, personas):
    run = make_run(labelled, answers([0.9, 0.2, 0.6, 0.1]))
    other = Run.objects.create(task="judge", strategy="taxonomy", provider="openai", model_name="m", prompt_version="v", status="finished")
    figures = reverse("vispr_attributes:figures", args=[run.pk])
    for name in ("reviewer_a", "adjudicator", "outsider"):
        client = client_as(personas[name])
        assert client.get(LEADERBOARD).status_code == 403
        assert client.get(figures + "?format=json").status_code == 403
    client = client_as(personas["admin"])
    assert client.get(reverse("vispr_attributes:figures", args=[other.pk])).status_code == 404  # another kind's run
    assert client.get(reverse("vispr_attributes:figures", args=[999999])).status_code == 404
    assert client.post(figures).status_code == 405 and client.post(LEADERBOARD).status_code == 405
    assert client_as(None).get(LEADERBOARD).status_code == 302  # to the login page


def test_the_leaderboard_ranks_runs_of_one_comparison_set(labelled, client_as, admin_user):
    good = make_run(labelled, answers([0.9, 0.2, 0.6, 0.1]), model="good", stand_in=True)
    worse = make_run(labelled, answers([0.1, 0.9, 0.6, 0.2]), model="worse")
    elsewhere = make_run(labelled[:2], answers([0.9, 0.2, 0.6, 0.1]), model="elsewhere")
    page = client_as(admin_user).get(LEADERBOARD).content.decode()
    assert page.index("<strong>good</strong>") < page.index("<strong>worse</strong>") and "<strong>elsewhere</strong>" not in page
    assert ">stand-in<" in page
    assert "0 VISPR attributes, 4 VISPR images" in page and "import VISPR first" in page  # nothing imported: the status says so
    sets = client_as(admin_user).get(LEADERBOARD).context["board"]["sets"]
    other_key = next(s["key"] for s in sets if s["runs"] == [elsewhere])
    page = client_as(admin_user).get(LEADERBOARD + f"?set={other_key}").content.decode()
    assert "<strong>elsewhere</strong>" in page and "<strong>good</strong>" not in page
    assert good.pk and worse.pk


def test_the_benchmarks_page_lists_the_registry_with_data_status_and_next_step(labelled, client_as, admin_user, personas):
    client = client_as(admin_user)
    page = client.get(reverse("scoring:benchmarks")).content.decode()
    assert f'<a href="{LEADERBOARD}">VISPR attribute prediction</a>' in page
    assert "0 VISPR attributes, 4 VISPR images" in page and "No VISPR attributes are imported; import VISPR first" in page
    from annotations.models import VisprAttribute

    VisprAttribute.objects.create(attribute_id="a0_safe", idx=0, description="Safe")
    page = client.get(reverse("scoring:benchmarks")).content.decode()
    assert "1 VISPR attributes, 4 VISPR images" in page and "/runs/new/?task=vispr-attributes" in page
    assert "CPRT severity leaderboard" in page and "4 images, 0 with a consensus score" in page
    assert client_as(personas["reviewer_a"]).get(reverse("scoring:benchmarks")).status_code == 403


@pytest.mark.parametrize("how", ["page", "api"])
def test_launching_before_vispr_is_imported_is_refused_with_what_to_do_and_stores_nothing(how, images, client_as, admin_user, openai_server):
    from core.models import AuditEvent

    client = client_as(admin_user)
    data = {"task": "vispr-attributes", "provider": "openai", "model_name": "gpt-5.1", "split": "all", "concurrency": "4", "seed": "0"}
    if how == "page":
        response = client.post(reverse("inference:run_new"), with_submission_token({**data, "action": "launch"}))
    else:
        response = client.post("/api/runs/", {**data, "concurrency": 4, "seed": 0}, content_type="application/json")
    assert response.status_code == 400
    assert "No VISPR attributes are imported; import VISPR first: manage.py import_vispr" in response.content.decode()
    assert Run.objects.count() == 0 and not AuditEvent.objects.filter(action="run.launch").exists()
