"""MultiPriv runs end to end against the fake providers: every image of a pair or a person reaches
the fake in one request, results are stored once per item, and the pages show the figures."""
from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command

from benchmarks.multipriv.importer import import_multipriv
from benchmarks.multipriv.models import Person, PersonImage, PersonPair
from benchmarks.multipriv.demo import write_release
from inference.models import Run, RunResult
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.openai_server import request_images
from tests.support.batch_steps import no_dispatch  # noqa: F401 - the fixture


@pytest.fixture
def persons(db):
    with tempfile.TemporaryDirectory() as tmp:
        import_multipriv(write_release(Path(tmp)))
    return list(Person.objects.order_by("pk"))


def launch(*args) -> dict:
    out = io.StringIO()
    call_command("launch_run", *args, "--here", "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_reid_run_sends_both_images_of_each_pair(openai_server, persons):
    report = launch("--kind", "multipriv-reid", "--provider", "openai", "--model", "gpt-5.1", "--seed", "3", "--sample", "10")
    run = Run.objects.get(pk=report["id"])
    assert report["status"] == "finished" and report["total"] == 10 and report["results"] == 10
    pairs = PersonPair.objects.filter(pk__in=run.item_ids)
    assert sum(p.same_person for p in pairs) == 5  # balanced
    assert openai_server.count == 10
    by_bytes = {i.file.open("rb").read(): i.pk for i in PersonImage.objects.all()}
    sent = [tuple(by_bytes[b] for b in request_images(r["json"])) for r in openai_server.requests]
    assert sorted(sent) == sorted((p.first_id, p.second_id) for p in pairs)  # both images of every pair, in order
    assert RunResult.objects.filter(run=run).count() == 10
    # the same seed and limit give the same pairs
    again = launch("--kind", "multipriv-reid", "--provider", "openai", "--model", "gpt-5.1", "--seed", "3", "--sample", "10")
    assert Run.objects.get(pk=again["id"]).item_ids == run.item_ids


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_profile_run_sends_all_images_of_a_person(openai_server, persons, client, admin_user):
    report = launch("--kind", "multipriv-profile", "--provider", "openai", "--model", "gpt-5.1")
    run = Run.objects.get(pk=report["id"])
    assert report["status"] == "finished" and report["total"] == len(persons) == 4
    assert sorted(len(request_images(r["json"])) for r in openai_server.requests) == [5, 5, 5, 5]
    client.force_login(admin_user)
    figures = client.get(f"/benchmarks/multipriv/runs/{run.pk}/?format=json").json()
    # the fake answers Gender "Female" and nothing else: persons 1 and 3 are female
    genders = [p.profile["Gender"] for p in persons]
    assert figures["metrics"]["fields"]["Gender"]["recovered"] == genders.count("Female") == 2
    assert figures["metrics"]["fields"]["Name"]["recovered"] == 0
    page = client.get(f"/benchmarks/multipriv/runs/{run.pk}/")
    assert page.status_code == 200 and b"By category" in page.content


@pytest.mark.django_db
def test_demo_runs_show_on_the_pages(client, admin_user):
    from benchmarks.multipriv.demo import seed_multipriv

    made = seed_multipriv()
    assert made == {"persons": 4, "runs": 2}
    assert seed_multipriv() == {"persons": 0, "runs": 0}  # idempotent
    client.force_login(admin_user)
    board = client.get("/benchmarks/multipriv/?format=json").json()["runs"]
    assert sorted(r["task"] for r in board) == ["multipriv-profile", "multipriv-reid"]
    reid = next(r for r in board if r["task"] == "multipriv-reid")
    assert reid["metrics"]["pairs"] == reid["coverage"]["items"] > 0 and reid["metrics"]["metrics"]["accuracy"]["value"] is not None
    for run in Run.objects.all():
        for url in (f"/runs/{run.pk}/", f"/benchmarks/multipriv/runs/{run.pk}/"):
            assert client.get(url).status_code == 200, url
    hub = client.get("/scoring/benchmarks/").content.decode()
    assert all(link in hub for link in ("/benchmarks/multipriv/", "/benchmarks/spy-bench/", "/benchmarks/local-classifiers/"))
    page = client.get("/benchmarks/multipriv/")
    assert b"not the paper" in page.content and b"Re-identification" in page.content
    person = Person.objects.first()
    assert client.get(f"/benchmarks/multipriv/persons/{person.pk}/").status_code == 200
    image = PersonImage.objects.first()
    response = client.get(f"/benchmarks/multipriv/images/{image.pk}/bytes")
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]


def test_every_kind_key_fits_the_run_task_field():
    from inference import kinds

    limit = Run._meta.get_field("task").max_length
    assert all(len(key) <= limit for key in kinds.KINDS), [k for k in kinds.KINDS if len(k) > limit]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_reid_over_gemini_sends_both_images_of_each_pair(gemini_server, persons):
    from tests.fakes.gemini_server import request_images as gemini_images

    report = launch("--kind", "multipriv-reid", "--provider", "gemini", "--model", "gemini-3-flash", "--sample", "4", "--seed", "1")
    run = Run.objects.get(pk=report["id"])
    assert report["status"] == "finished" and report["results"] == 4
    by_bytes = {i.file.open("rb").read(): i.pk for i in PersonImage.objects.all()}
    sent = sorted(tuple(by_bytes[b] for b in gemini_images(r["json"])) for r in gemini_server.requests)
    pairs = PersonPair.objects.filter(pk__in=run.item_ids)
    assert sent == sorted((p.first_id, p.second_id) for p in pairs)


@pytest.mark.django_db
def test_profile_runs_in_batch_mode_to_the_same_figures(openai_server, persons, admin_user, no_dispatch):
    from inference import launching
    from inference.selection import Selection
    from tests.support.batch_steps import drive
    from benchmarks.multipriv import report as service

    spec = launching.LaunchSpec("multipriv-profile", "openai", "gpt-5.1", "", False, "multipriv-profile-v1", Selection(), 2,
                                mode=Run.MODE_BATCH)
    run = drive(launching.launch_run(admin_user, spec), steps=20)
    assert run.status == Run.STATUS_FINISHED, (run.status, run.error)
    paths = [p for _, p in openai_server.batch_calls]
    assert "/v1/files" in paths and "/v1/batches" in paths  # through the Files and Batches endpoints, not one chat request
    figures = service.report(run)["metrics"]
    assert figures["persons"] == 4 and figures["fields"]["Gender"]["recovered"] == 2 and figures["fields"]["Name"]["recovered"] == 0
