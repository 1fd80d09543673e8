"""The REST API (/api/): roles, images, runs, metrics, agreement (the labelings: test_api_labelings.py),
strict input (every refusal leaves the data unchanged), the OpenAPI schema and the Swagger UI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.models import Annotator, Labeling
from inference import dispatching
from inference.models import Run
from scoring.services import agreement, run_metrics, scores
from scoring.models import ImageScore, ScoringProfile
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.labeling import all_answers
from tests.support.permission_cases import PERSONAS
from tests.support.permission_cases import api as api_cases
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run



# --- the permission matrix, through the real URL names ----------------------------------------------------


@pytest.mark.slow  # every API case for every persona: about 10 s alone
def test_permission_cases_for_the_api(db, client):
    world = {"anonymous": None, "outsider": make_user("outsider", None), "reviewer_a": make_user("reviewer_a", "reviewer"),
             "reviewer_b": make_user("reviewer_b", "reviewer"), "adjudicator": make_user("adjudicator", "adjudicator"),
             "admin": make_user("admin", "admin", superuser=True)}
    api_cases.setup(world)
    cases = api_cases.cases(world)
    assert len({c.url_name for c in cases}) == 24  # every API URL name (exports, imports and dataset builds: 7)
    failures = []
    for case in cases:
        url = reverse(case.url_name, kwargs=case.kwargs) + (f"?{case.query}" if case.query else "")
        for persona in PERSONAS:
            client.logout()
            if world[persona] is not None:
                client.force_login(world[persona])
            got = getattr(client, case.method)(url, data=case.data or {}).status_code
            if got != case.expected(persona):
                failures.append(f"{case.method.upper()} {url} as {persona}: expected {case.expected(persona)}, got {got}")
    assert not failures, "\n".join(failures)


def test_tokens_come_from_drf_create_token_and_anonymous_gets_401(reviewer_a, capsys):
    call_command("drf_create_token", "reviewer_a")
    key = Token.objects.get(user=reviewer_a).key
    assert key in capsys.readouterr().out
    client = APIClient()
    response = client.get("/api/images/")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/images/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/images/").status_code == 200


def test_outsider_gets_403_everywhere(api, outsider):
    client = api(outsider)
    for url in ("/api/images/", "/api/labelings/", "/api/runs/", "/api/metrics/", "/api/agreement/", "/api/schema/", "/api/docs/"):
        assert client.get(url).status_code == 403, url


# --- images -------------------------------------------------------------------------------------------


@pytest.fixture
def scored(make_image, reviewer_a, reviewer_b, model_annotators, set_labels):
    """Three images; the first two have a consensus (two model annotators) under the active profile."""
    images = [make_image("2017_s1", split="test"), make_image("2017_s2", split="train", color=(1, 2, 3)), make_image("2017_s3", color=(3, 2, 1))]
    gpt, gemini = model_annotators
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gemini])
    profile.activate()
    for annotator in (gpt, gemini):
        set_labels(images[0], annotator, {"gov_ids": 1.0})
        set_labels(images[1], annotator)
    scores.recompute_scores(profile)
    return images


def test_image_list_with_filters(api, adjudicator, scored):
    client = api(adjudicator)
    body = client.get("/api/images/").json()
    assert body["count"] == 3 and [r["vispr_id"] for r in body["results"]] == ["2017_s1", "2017_s2", "2017_s3"]
    s1 = ImageScore.objects.get(image=scored[0], profile=ScoringProfile.active())
    assert body["results"][0]["level"] == s1.level and body["results"][0]["score"] == pytest.approx(s1.score)
    assert body["results"][2]["level"] is None
    assert body["results"][0]["bytes_url"] == reverse("annotations:image_bytes", kwargs={"image_id": scored[0].pk})
    assert [r["vispr_id"] for r in client.get("/api/images/", {"split": "train"}).json()["results"]] == ["2017_s2"]
    assert [r["vispr_id"] for r in client.get("/api/images/", {"level": s1.level}).json()["results"]] == ["2017_s1"]
    assert [r["vispr_id"] for r in client.get("/api/images/", {"attribute": "gov_ids"}).json()["results"]] == ["2017_s1"]
    gpt = Annotator.objects.get(provider="openai")
    assert client.get("/api/images/", {"annotator": gpt.pk}).json()["count"] == 2


def test_page_size_sets_the_page(api, adjudicator, scored):
    client = api(adjudicator)
    body = client.get("/api/images/", {"page_size": 2}).json()
    assert body["count"] == 3 and [r["vispr_id"] for r in body["results"]] == ["2017_s1", "2017_s2"] and body["next"]
    second = client.get("/api/images/", {"page_size": 2, "page": 2}).json()
    assert [r["vispr_id"] for r in second["results"]] == ["2017_s3"] and second["next"] is None
    assert len(client.get("/api/labelings/", {"page_size": 1}).json()["results"]) <= 1


def test_reviewers_filter_by_their_own_annotator_only(api, reviewer_a, reviewer_b, scored, set_labels):
    mine = Annotator.for_user(reviewer_a)
    set_labels(scored[2], mine)
    client = api(reviewer_a)
    assert [r["vispr_id"] for r in client.get("/api/images/", {"annotator": mine.pk}).json()["results"]] == ["2017_s3"]
    other = Annotator.for_user(reviewer_b)
    response = client.get("/api/images/", {"annotator": other.pk})
    assert response.status_code == 403 and "own annotator id" in response.json()["detail"]
    assert client.get("/api/images/", {"attribute": "gov_ids"}).status_code == 403


@pytest.mark.parametrize("query, message", [
    ({"level": "5"}, "less than or equal to 4"),
    ({"level": "one"}, "valid integer"),
    ({"split": "validation"}, "not a valid choice"),
    ({"attribute": "no_such_key"}, "Unknown attribute"),
    ({"annotator": "0"}, "greater than or equal to 1"),
    ({"annotator": "9" * 40}, "less than or equal to"),
    ({"colour": "red"}, "Unknown field(s): colour"),
    ({"page": "-1"}, "greater than or equal to 1"),
    ({"page_size": "0"}, "greater than or equal to 1"),
    ({"page_size": "501"}, "less than or equal to 500"),
    ({"page_size": "ten"}, "valid integer"),
])
def test_image_list_refuses_bad_filters(api, adjudicator, scored, query, message):
    response = api(adjudicator).get("/api/images/", query)
    assert response.status_code == 400 and message in json.dumps(response.json())


def test_image_list_refuses_repeated_parameters(api, adjudicator, scored):
    response = api(adjudicator).get("/api/images/?split=test&split=train")
    assert response.status_code == 400 and "once" in json.dumps(response.json())


def test_image_detail_is_blind_until_the_reviewer_submits(api, reviewer_a, reviewer_b, adjudicator, scored, set_labels):
    image = scored[2]
    set_labels(image, Annotator.for_user(reviewer_a), default=1.0)
    Labeling.objects.create(image=image, annotator=Annotator.for_user(reviewer_a), status="submitted")
    mine_b = Labeling.objects.create(image=image, annotator=Annotator.for_user(reviewer_b))
    body = api(reviewer_b).get(f"/api/images/{image.pk}/").json()
    assert body["labels"] == [] and body["my_labeling"] == {"id": mine_b.pk, "status": "draft"}
    assert len(api(reviewer_a).get(f"/api/images/{image.pk}/").json()["labels"]) == 22
    assert {r["annotator"] for r in api(reviewer_a).get(f"/api/images/{image.pk}/").json()["labels"]} == {"you"}
    staff_labels = api(adjudicator).get(f"/api/images/{image.pk}/").json()["labels"]
    assert {r["annotator"] for r in staff_labels} == {"human:reviewer_a"}
    # reviewer_b submits through the API: now they see reviewer_a's labels, anonymised.
    client = api(reviewer_b)
    assert client.post(f"/api/labelings/{mine_b.pk}/submit/", {"version": 1, "values": all_answers(0)}, format="json").status_code == 200
    labels = client.get(f"/api/images/{image.pk}/").json()["labels"]
    assert {r["annotator"] for r in labels} == {"you", "reviewer #1"} and len(labels) == 44
    assert client.get(f"/api/images/{image.pk}/?x=1").status_code == 400


# --- runs ---------------------------------------------------------------------------------------------

LAUNCH = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "concurrency": 4}


def test_admin_launches_a_run_with_the_forms_rules(api, admin_user, openai_server, images, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None, **options: sent.append(run_id) or 1)
    client = api(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs/", {**LAUNCH, "counterfactual_faces": True, "sample_size": 3, "seed": 5}, format="json")
    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert sent == [run.pk] and response.json()["id"] == run.pk
    assert (run.strategy, run.counterfactual_faces, run.prompt_version, len(run.image_ids)) == ("taxonomy", True, "judge-v2", 3)
    body = client.get(f"/api/runs/{run.pk}/").json()
    assert (body["status"], body["total_images"], body["done_count"], body["percent_done"]) == ("queued", 3, 0, 0)
    assert client.get("/api/runs/").json()["results"][0]["id"] == run.pk


def test_api_launch_without_concurrency_takes_the_forms_default(api, admin_user, openai_server, images, monkeypatch,
                                                               django_capture_on_commit_callbacks):
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None, **kw: 1)
    with django_capture_on_commit_callbacks(execute=True):
        response = api(admin_user).post("/api/runs/", {"task": "judge", "provider": "openai", "model_name": "gpt-5.1"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["concurrency"] == 8
    assert body["strategy"] == "taxonomy" and body["endpoint"].startswith("127.0.0.1:") and body["stand_in"] is False


@pytest.mark.parametrize("change, field, message", [
    ({"strategy": "wild"}, "strategy", "valid choice"),
    ({"task": "annotate"}, "strategy", "Annotate runs take no strategy"),
    ({"provider": "gemini"}, "provider", "unavailable"),
    ({"provider": "anthropic"}, "provider", "valid choice"),
    ({"model_name": "gpt 5; rm -rf"}, "model_name", "Letters, digits"),
    ({"concurrency": 100000}, "concurrency", "less than or equal to 256"),
    ({"concurrency": "4"}, "concurrency", "valid integer"),
    ({"counterfactual_faces": "on"}, "counterfactual_faces", "valid boolean"),
    ({"min_score": 0.5}, "from_run", "A minimum score needs the run"),
    ({"min_score": "high"}, "min_score", "valid number"),
    ({"from_run": 4242}, "from_run", "There is no run #4242."),
    ({"split": "other"}, "non_field_errors", "matches no images"),
    ({"budget": 10}, "non_field_errors", "Unknown field(s): budget"),
])
def test_run_launch_refuses_bad_input(api, admin_user, openai_server, images, change, field, message):
    response = api(admin_user).post("/api/runs/", {**LAUNCH, **change}, format="json")
    assert response.status_code == 400 and message in " ".join(response.json()[field]), response.json()
    assert not Run.objects.exists()


def test_runs_are_for_admins_only(api, adjudicator, reviewer_a):
    run = make_run(status="running")
    for user in (adjudicator, reviewer_a):
        client = api(user)
        assert client.get("/api/runs/").status_code == 403
        assert client.get(f"/api/runs/{run.pk}/").status_code == 403
        assert client.post(f"/api/runs/{run.pk}/cancel/").status_code == 403
    assert Run.objects.get(pk=run.pk).status == "running"


def test_cancel_and_resume(api, admin_user, monkeypatch, django_capture_on_commit_callbacks):
    images = make_images(3, prefix="2017_c")
    run = make_run(status="running")
    add_results(run, [(images[0], "ok", 0.5)])
    Run.objects.filter(pk=run.pk).update(image_ids=[i.pk for i in images], item_ids=[i.pk for i in images], total=3)
    client = api(admin_user)
    assert client.post(f"/api/runs/{run.pk}/cancel/", {"now": True}, format="json").status_code == 400
    assert Run.objects.get(pk=run.pk).status == "running"
    cancelled = client.post(f"/api/runs/{run.pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"  # no heartbeat: nobody to confirm
    again = client.post(f"/api/runs/{run.pk}/cancel/")
    assert again.status_code == 409 and "nothing to cancel" in again.json()["detail"]
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, item_ids=None, **options: sent.append(sorted(item_ids)) or 1)
    with django_capture_on_commit_callbacks(execute=True):
        resumed = client.post(f"/api/runs/{run.pk}/resume/")
    assert resumed.status_code == 200 and resumed.json()["redispatched"] == 2 and resumed.json()["run"]["status"] == "queued"
    assert sent == [[images[1].pk, images[2].pk]]
    Run.objects.filter(pk=run.pk).update(status="running", heartbeat_at=None)
    from django.utils import timezone

    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    refused = client.post(f"/api/runs/{run.pk}/resume/")
    assert refused.status_code == 409 and "nothing to resume" in refused.json()["detail"]


# --- metrics and agreement -------------------------------------------------------------------------------


def test_metrics_match_the_pages(api, adjudicator, admin_user):
    images = make_images(12, prefix="2017_m")
    run = make_run()
    add_results(run, [(image, "ok", min(1.0, image.published_score + 0.05)) for image in images])
    profile = ScoringProfile.active()
    want = run_metrics.run_metrics([run], profile)[run.pk]
    for user in (adjudicator, admin_user):
        body = api(user).get(f"/api/metrics/{run.pk}/").json()
        assert body["run"]["id"] == run.pk and body["profile"] == profile.label
        assert body["metrics"] == json.loads(json.dumps(want))
    listed = api(adjudicator).get("/api/metrics/", {"strategy": "zero_shot"}).json()["results"]
    assert [r["run"]["id"] for r in listed] == [run.pk] and listed[0]["metrics"] == body["metrics"]
    assert api(adjudicator).get("/api/metrics/", {"strategy": "taxonomy"}).json()["results"] == []


def test_metrics_only_for_finished_judge_runs(api, adjudicator, reviewer_a):
    running = make_run(status="running")
    annotate = make_run(task="annotate")
    client = api(adjudicator)
    assert client.get(f"/api/metrics/{running.pk}/").status_code == 409
    response = client.get(f"/api/metrics/{annotate.pk}/")
    assert response.status_code == 409 and "judge runs only" in response.json()["detail"]
    assert client.get("/api/metrics/999999/").status_code == 404
    assert api(reviewer_a).get(f"/api/metrics/{running.pk}/").status_code == 403


def test_agreement_matches_the_page(api, adjudicator, reviewer_a, model_annotators):
    images = make_images(6, prefix="2017_g")
    gpt, gemini = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gov_ids" else 0.0)
    label_everything(images, gemini, lambda i, k: 1.0 if (k == "gov_ids" and i % 2) else 0.0)
    body = api(adjudicator).get("/api/agreement/", {"split": "test"}).json()
    assert body["split"] == "test" and body["report"] == json.loads(json.dumps(agreement.agreement_study("test")))
    assert len(body["report"]["annotators"]) == 2
    assert api(adjudicator).get("/api/agreement/", {"split": "bogus"}).status_code == 400
    assert api(adjudicator).get("/api/agreement/", {"format": "csv"}).status_code in (400, 404)
    assert api(reviewer_a).get("/api/agreement/").status_code == 403


# --- schema and docs -------------------------------------------------------------------------------------


def test_schema_generates_without_warnings_and_is_valid_openapi(api, reviewer_a):
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator
    from openapi_spec_validator import validate

    GENERATOR_STATS.reset()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS, f"warnings {dict(GENERATOR_STATS._warn_cache)} errors {dict(GENERATOR_STATS._error_cache)}"
    served = api(reviewer_a).get("/api/schema/?format=json")
    assert served.status_code == 200
    document = json.loads(served.content)
    validate(document)
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) == set(schema["paths"]) and len(document["paths"]) == 26  # + exports, imports, datasets (7)
    assert "tokenAuth" in document["components"]["securitySchemes"]


def test_swagger_ui_uses_local_assets_and_no_inline_script(api, reviewer_a):
    import drf_spectacular_sidecar

    client = api(reviewer_a)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html and "http" not in html.split("<body>")[1]
    assert "<script>" not in html  # every script has a src: our CSP allows no inline script
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and "/api/schema/" in script.content.decode()
    assets = Path(drf_spectacular_sidecar.__file__).parent / "static" / "drf_spectacular_sidecar" / "swagger-ui-dist"
    assert (assets / "swagger-ui-bundle.js").is_file() and (assets / "swagger-ui.css").is_file()


def test_api_index_lists_every_endpoint_as_json_and_as_a_page(api, reviewer_a, client_as):
    body = api(reviewer_a).get("/api/", HTTP_ACCEPT="application/json").json()
    assert body["docs"] == "/api/docs/" and body["schema"] == "/api/schema/"
    listed = {(e["path"], e["method"]) for e in body["endpoints"]}
    assert {("/api/images/", "GET"), ("/api/runs/", "POST"), ("/api/labelings/{labeling_id}/submit/", "POST")} <= listed
    assert all(e["summary"] for e in body["endpoints"])
    page = client_as(reviewer_a).get("/api/", HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    html = page.content.decode()
    assert page.status_code == 200 and "<nav class=\"nav\">" in html and "/api/labelings/{labeling_id}/submit/" in html
    assert api(reviewer_a).get("/api/?x=1").status_code == 400
