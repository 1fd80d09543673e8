"""A finished MultiPriv run keeps its figures when the release is imported again (issue 34): its truth is
frozen at launch; the run page says what changed and offers a confirmed, audited rescore; the
migration freezes the runs made before it from the data as it then is."""
from __future__ import annotations

import importlib
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from PIL import Image as PILImage

from benchmarks.multipriv.demo import write_release
from benchmarks.multipriv.importer import import_multipriv
from benchmarks.multipriv.models import Person, PersonPair
from core.models import AuditEvent
from inference.models import Run, RunResult
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.batch_steps import no_dispatch  # noqa: F401 - the fixture

migration = importlib.import_module("inference.migrations.0015_run_truth_frozen_at_launch")


@pytest.fixture
def release(db, tmp_path):
    folder = write_release(tmp_path / "release")
    import_multipriv(folder)
    return folder


def launch(*args) -> Run:
    out = io.StringIO()
    call_command("launch_run", *args, "--here", "--json", stdout=out, stderr=io.StringIO())
    return Run.objects.get(pk=json.loads(out.getvalue())["id"])


def change_profile(release: Path, person: str, **values) -> None:
    path = release / person / f"{person}.json"
    profile = json.loads(path.read_text(encoding="utf-8"))
    profile[0].update(values)
    path.write_text(json.dumps(profile), encoding="utf-8")


def figures(client, run) -> dict:
    response = client.get(f"/benchmarks/multipriv/runs/{run.pk}/?format=json")
    assert response.status_code == 200
    return response.json()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_changed_release_leaves_a_finished_profile_run_as_it_was(openai_server, release, client, admin_user):
    run = launch("--kind", "multipriv-profile", "--provider", "openai", "--model", "gpt-5.1")
    assert run.status == "finished" and run.truth["source"] == "launch" and len(run.truth["items"]) == 4
    client.force_login(admin_user)
    before = figures(client, run)
    # the fake answers Gender "Female" for everyone: persons 1 and 3 are female
    assert before["metrics"]["fields"]["Gender"]["recovered"] == 2 and before["release_changes"] == []

    change_profile(release, "person_1", Gender="Male", Name="Ada Q. Quill")
    report = import_multipriv(release)
    assert report.updated_persons == 1
    assert Person.objects.get(name="person_1").profile["Gender"] == "Male"

    after = figures(client, run)
    changes = after.pop("release_changes")
    before.pop("release_changes")
    assert after == before  # every figure, per field, category and person, and the truth's fingerprint
    assert changes == ["person_1: profile changed (Gender, Name)"]
    page = client.get(f"/benchmarks/multipriv/runs/{run.pk}/").content.decode()
    assert 'id="release-changed"' in page and "person_1: profile changed (Gender, Name)" in page
    assert "Rescore" in page


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_rescore_needs_a_confirmation_and_is_audited(openai_server, release, client, admin_user):
    run = launch("--kind", "multipriv-profile", "--provider", "openai", "--model", "gpt-5.1")
    client.force_login(admin_user)
    before = figures(client, run)
    change_profile(release, "person_1", Gender="Male")
    import_multipriv(release)
    url = f"/benchmarks/multipriv/runs/{run.pk}/rescore"

    refused = client.post(url, {})
    assert refused.status_code == 400 and "Tick the confirmation" in refused.content.decode()
    run.refresh_from_db()
    assert run.truth["source"] == "launch" and not AuditEvent.objects.filter(action="multipriv.rescore").exists()
    assert figures(client, run)["metrics"] == before["metrics"]

    done = client.post(url, {"confirm": "yes"})
    assert done.status_code == 302
    run.refresh_from_db()
    assert run.truth["source"] == "rescore"
    after = figures(client, run)
    assert after["metrics"]["fields"]["Gender"]["recovered"] == 1 and after["release_changes"] == []
    assert after["truth"]["fingerprint"] != before["truth"]["fingerprint"]
    event = AuditEvent.objects.get(action="multipriv.rescore")
    assert event.data["old"] == before["truth"]["fingerprint"] and event.data["new"] == after["truth"]["fingerprint"]
    assert event.data["changes"] == ["person_1: profile changed (Gender)"]

    again = client.post(url, {"confirm": "yes"})  # nothing changed since: refused, nothing written
    assert again.status_code == 400 and "nothing to rescore" in again.content.decode()
    assert AuditEvent.objects.filter(action="multipriv.rescore").count() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_replaced_image_is_named_and_reid_figures_stay(openai_server, release, client, admin_user):
    run = launch("--kind", "multipriv-reid", "--provider", "openai", "--model", "gpt-5.1", "--seed", "3", "--sample", "10")
    client.force_login(admin_user)
    before = figures(client, run)
    pair = PersonPair.objects.filter(pk__in=run.item_ids).select_related("first__person").order_by("pk").first()
    shown = f"{pair.first.person.name}/{pair.first.label}"
    PILImage.new("RGB", (64, 64), (1, 2, 3)).save(release / pair.first.person.name / f"{pair.first.label}.png", format="PNG")
    assert import_multipriv(release).replaced_images == 1
    after = figures(client, run)
    changes = after.pop("release_changes")
    before.pop("release_changes")
    assert after == before
    assert changes and all(f"image {shown} replaced" in line for line in changes)


@pytest.mark.django_db
def test_the_migration_freezes_runs_made_before_it_from_the_current_data(release):
    person = Person.objects.get(name="person_2")
    pair = PersonPair.objects.get(pk=PersonPair.objects.create(first=person.images.order_by("pk")[0],
                                                               second=person.images.order_by("pk")[1], same_person=True).pk)
    profile_run = Run.objects.create(task="multipriv-profile", provider="openai", model_name="m", prompt_version="multipriv-profile-v1",
                                     item_ids=[person.pk], total=1, status="finished")
    reid_run = Run.objects.create(task="multipriv-reid", provider="openai", model_name="m", prompt_version="multipriv-reid-v1",
                                  item_ids=[pair.pk], total=1, status="finished")
    judge_run = Run.objects.create(task="judge", strategy="zero_shot", provider="openai", model_name="m", prompt_version="judge-v1", total=0)
    RunResult.objects.create(run=profile_run, item_id=person.pk, outcome="ok",
                             raw={"answer": {"declined": False, "profile": {"Name": "Bram Oakes"}}})
    assert profile_run.truth == {}

    # the models as that migration sees them (MultiPriv's were still annotations' then: annotations/0013 moved them)
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    state = MigrationLoader(connection).project_state(("inference", "0015_run_truth_frozen_at_launch"), at_end=True)
    migration.freeze_existing_multipriv_runs(state.apps, None)

    profile_run.refresh_from_db(), reid_run.refresh_from_db(), judge_run.refresh_from_db()
    assert profile_run.truth["source"] == "migration"
    assert profile_run.truth["items"] == {str(person.pk): {"person": "person_2", "profile": person.present_fields(),
                                                           "profile_sha256": person.profile_sha256}}
    assert reid_run.truth["items"][str(pair.pk)]["same_person"] is True
    assert reid_run.truth["items"][str(pair.pk)]["first"] == f"person_2/{pair.first.label}"
    assert judge_run.truth == {}
    # the migration's snapshot has the form the launch writes: the service reads it, and nothing differs now
    from benchmarks.multipriv import report as service

    assert service.release_changes(profile_run) == [] and service.release_changes(reid_run) == []
    assert service.report(profile_run)["metrics"]["fields"]["Name"]["recovered"] == 1
    Person.objects.filter(pk=person.pk).update(profile={**person.profile, "Name": "Someone Else"})
    assert service.report(profile_run)["metrics"]["fields"]["Name"]["recovered"] == 1  # frozen
