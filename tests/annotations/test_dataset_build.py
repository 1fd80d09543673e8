"""Dataset versions: build_dataset (the preset, --json, determinism, quotas, refusals), the build job
(dispatch on commit, claimed once, cancel, resume), checksums."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotations.datasets import build, recipes
from annotations.datasets.models import DatasetBuild, DatasetVersion
from annotations.datasets.versions import dataset_image_ids
from annotations.models import Image
from core.models import AuditEvent
from tests.support.dispatch import record_sends
from tests.support.vispr_world import PAPER_TEST, WORLD, make_world, vispr_image

pytestmark = pytest.mark.django_db


def build_json(*args) -> dict:
    out = io.StringIO()
    call_command("build_dataset", *args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_cprt_paper_on_the_test_split_selects_the_papers_candidates():
    make_world()
    got = build_json("--recipe", "cprt-paper", "--vispr-split", "test", "--seed", "3", "--name", "paper-test")
    assert got["name"] == "paper-test" and got["seed"] == 3 and got["vispr_splits"] == ["test2017"]
    assert got["members"] == sorted(set().union(*PAPER_TEST.values()))
    assert got["rules"] == {rule: len(ids) for rule, ids in PAPER_TEST.items()}
    assert got["overlaps"] == {"severe & safe": 0, "severe & level2-no-face": 1, "safe & level2-no-face": 0}
    assert set(got["checksums"]) == {"stored labels test2017"} and len(got["checksums"]["stored labels test2017"]) == 64
    version = DatasetVersion.objects.get(name="paper-test")
    assert version.recipe["rules"][1] == {"name": "safe", "any": ["a0_safe"], "none": [], "only": True, "quota": None,
                                          "vispr_splits": None}
    assert version.recipe["checksums_of"] == "stored labels"
    # The preset names ids this small world never carries (a typo would show the same way).
    assert "a31_passport" in got["unseen_ids"] and "a9_face_complete" not in got["unseen_ids"]
    ids = dataset_image_ids(version)
    assert sorted(Image.objects.filter(pk__in=ids).values_list("vispr_id", flat=True)) == got["members"]
    build_row = DatasetBuild.objects.get(name="paper-test")
    assert (build_row.status, build_row.done, build_row.total, build_row.version_id) == ("finished", 9, 9, version.pk)
    actions = list(AuditEvent.objects.filter(action__startswith="dataset.build").values_list("action", flat=True).order_by("id"))
    assert actions == ["dataset.build.launch", "dataset.build.finished"]


def test_a_vispr_split_name_and_the_other_split():
    make_world()
    got = build_json("--recipe", "cprt-paper", "--vispr-split", "val2017", "--name", "paper-val")
    assert got["members"] == ["2017_1001", "2017_1002"] and got["rules"] == {"severe": 1, "safe": 1, "level2-no-face": 0}


def quota_recipe(tmp_path, seed=0, quota=3):
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps({"vispr_splits": ["test2017"], "seed": seed, "rules": [
        {"name": "faces-or-safe", "any": ["a9_face_complete", "a10_face_partial", "a0_safe"], "quota": quota},
        {"name": "money", "any": ["a30_credit_card"]}]}))
    return str(path)


def test_quotas_are_seeded_and_independent_of_database_order(tmp_path):
    make_world()
    first = build_json("--recipe", quota_recipe(tmp_path), "--seed", "7", "--name", "q1")
    assert first["rules"] == {"faces-or-safe": 3, "money": 1} and first["candidates"] == {"faces-or-safe": 6, "money": 1}
    again = build_json("--recipe", quota_recipe(tmp_path), "--seed", "7", "--name", "q2")
    assert again["members"] == first["members"]
    # Same labels stored in the reverse order (other primary keys): the same members.
    DatasetVersion.objects.all().delete()
    Image.objects.all().delete()
    make_world(order=list(reversed(WORLD)))
    reordered = build_json("--recipe", quota_recipe(tmp_path), "--seed", "7", "--name", "q3")
    assert reordered["members"] == first["members"]
    # Other seeds draw other samples (of 8 seeds, not all the same).
    samples = {tuple(build_json("--recipe", quota_recipe(tmp_path), "--seed", str(s), "--name", f"s{s}")["members"]) for s in range(8)}
    assert len(samples) > 1


def test_a_name_that_exists_is_refused_and_nothing_changes():
    make_world()
    build_json("--recipe", "cprt-paper", "--name", "taken")
    before = (DatasetBuild.objects.count(), DatasetVersion.objects.get(name="taken").members.count())
    with pytest.raises(CommandError, match="A dataset version named 'taken' exists"):
        call_command("build_dataset", "--recipe", "cprt-paper", "--name", "taken", stdout=io.StringIO(), stderr=io.StringIO())
    assert (DatasetBuild.objects.count(), DatasetVersion.objects.get(name="taken").members.count()) == before


@pytest.mark.parametrize("recipe, message", [
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"]}], "colour": "red"}, "colour: unknown field"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "qouta": 3}]}, r"rules\[0\] \(r\).qouta: unknown field"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["face"]}]}, "'face' is not a VISPR attribute id"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "quota": -1}]}, r"quota: Input should be greater than or equal to 1"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "quota": "5"}]}, "quota: Input should be a valid integer"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"], "none": ["a0_safe"]}]}, "cannot be both required"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": []}]}, "any: List should have at least 1 item"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"]}, {"name": "r", "any": ["a1_age_approx"]}]}, "listed twice"),
    ({"vispr_splits": ["test-2017"], "rules": [{"name": "r", "any": ["a0_safe"]}]}, "is not a VISPR split name"),
    ({"rules": [{"name": "r", "any": ["a0_safe"]}]}, "vispr_splits: required"),
    ({"vispr_splits": ["test2017"], "seed": -2, "rules": [{"name": "r", "any": ["a0_safe"]}]}, "seed: Input should be greater"),
    ({"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"]}], "hub": {"license": "mit; rm"}}, "hub.license"),
    ([1, 2], "A recipe is a JSON object"),
])
def test_bad_recipes_are_refused_with_a_clear_message(tmp_path, recipe, message):
    make_world()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(recipe))
    with pytest.raises(CommandError, match=message):
        call_command("build_dataset", "--recipe", str(path), "--name", "bad", stdout=io.StringIO(), stderr=io.StringIO())
    assert not DatasetBuild.objects.exists() and not DatasetVersion.objects.exists()


@pytest.mark.parametrize("args, message", [
    (["--recipe", "nope"], "neither a preset"),
    (["--recipe", "cprt-paper", "--seed", "x"], "--seed: 'x' is not a whole number"),
    (["--recipe", "cprt-paper", "--vispr-split", "other"], "No VISPR image is in our split 'other'"),
    (["--recipe", "cprt-paper", "--vispr-split", "test 2017"], "--vispr-split: .*is not a VISPR split name"),
    (["--recipe", "cprt-paper", "--vispr-split", "train2017"], r"No stored image is in the VISPR split\(s\) train2017"),
    (["--recipe", "cprt-paper", "--name", "has space"], "is not a dataset version name"),
    (["--recipe", "cprt-paper"], "--name: name the dataset version"),
    (["--recipe", "cprt-paper", "--vispr-root", "/nonexistent/vispr"], "is not a folder"),
])
def test_bad_command_input_is_refused(args, message):
    make_world()
    if "--name" not in args and "--name: name" not in message:
        args = [*args, "--name", "x"]
    with pytest.raises(CommandError, match=message):
        call_command("build_dataset", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert not DatasetBuild.objects.exists() and not DatasetVersion.objects.exists()


def test_a_recipe_that_selects_nothing_fails_and_keeps_nothing(tmp_path):
    vispr_image("2017_0101", "test2017", ["a59_sports"])
    with pytest.raises(CommandError, match="matched any rule"):
        call_command("build_dataset", "--recipe", "cprt-paper", "--name", "empty", stdout=io.StringIO(), stderr=io.StringIO())
    assert DatasetBuild.objects.get().status == "failed" and not DatasetVersion.objects.exists()


def test_file_checksums_when_the_release_is_at_hand(tmp_path):
    make_world()
    root = tmp_path / "vispr"
    (root / "annotations" / "test2017").mkdir(parents=True)
    (root / "attributes.tsv").write_text("0\ta0_safe\tsafe\n")
    (root / "test2017.txt").write_text("annotations/test2017/2017_0001.json\n")
    (root / "annotations" / "test2017" / "2017_0001.json").write_text('{"id": "2017_0001", "labels": ["a9_face_complete"]}')
    got = build_json("--recipe", "cprt-paper", "--name", "with-files", "--vispr-root", str(root))
    import hashlib
    assert got["checksums"]["attributes.tsv"] == hashlib.sha256(b"0\ta0_safe\tsafe\n").hexdigest()
    assert set(got["checksums"]) == {"stored labels test2017", "attributes.tsv", "test2017.txt", "annotations/test2017/*.json (1 files)"}
    assert got["recipe"]["checksums_of"] == "files"


def test_the_stored_labels_checksum_follows_the_labels():
    make_world()
    a = build_json("--recipe", "cprt-paper", "--name", "a")["checksums"]
    Image.objects.filter(vispr_id="2017_0008").update(vispr_labels=["a59_sports", "a58_hobbies"])
    b = build_json("--recipe", "cprt-paper", "--name", "b")["checksums"]
    assert a != b


# ---------------------------------------------------------------------------------------------
# The job


def test_launch_dispatches_on_commit_and_a_second_delivery_does_nothing(admin_user, monkeypatch, django_capture_on_commit_callbacks):
    make_world()
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = build.start_build(admin_user, recipes.preset("cprt-paper"), "queued-one")
    assert sent == [("annotations.build_dataset", [job.pk])] and job.status == "queued" and job.total == 9
    assert build.run_build(job.pk)["status"] == "finished"
    assert build.run_build(job.pk) == {"job_id": job.pk, "status": "finished", "claimed": False}
    assert DatasetVersion.objects.filter(name="queued-one").count() == 1


def test_a_second_launch_of_the_same_name_while_one_is_queued_is_refused(monkeypatch):
    make_world()
    record_sends(monkeypatch)
    build.start_build(None, recipes.preset("cprt-paper"), "twice")
    with pytest.raises(build.BuildError, match="already under way"):
        build.start_build(None, recipes.preset("cprt-paper"), "twice")
    assert DatasetBuild.objects.count() == 1


def test_cancel_a_queued_build_then_resume_it(admin_user, monkeypatch, django_capture_on_commit_callbacks):
    make_world()
    sent = record_sends(monkeypatch)
    job = build.start_build(admin_user, recipes.preset("cprt-paper"), "cancelled-first", dispatch=False)
    assert build.cancel_build(admin_user, job)
    job.refresh_from_db()
    assert job.status == "cancelled" and build.run_build(job.pk)["claimed"] is False
    assert not DatasetVersion.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert build.resume_build(admin_user, job)
    assert sent == [("annotations.build_dataset", [job.pk])]
    assert build.run_build(job.pk)["status"] == "finished"
    assert DatasetVersion.objects.get(name="cancelled-first").members.count() == 7


def test_a_running_build_stops_at_a_cancel_and_keeps_nothing(monkeypatch):
    make_world()
    monkeypatch.setattr(build, "CHUNK", 2)
    job = build.start_build(None, recipes.preset("cprt-paper"), "stopped", dispatch=False)
    real_renew = build.Lease.renew

    def renew_then_cancel(lease, *args, **kwargs):
        ok = real_renew(lease, *args, **kwargs)
        build.cancel_build(None, DatasetBuild.objects.get(pk=job.pk))  # a running build: asked to stop
        return ok

    monkeypatch.setattr(build.Lease, "renew", renew_then_cancel)
    assert build.run_build(job.pk)["status"] == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled" and job.done == 2 and not DatasetVersion.objects.exists()
