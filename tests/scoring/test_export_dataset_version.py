"""Exports scoped to a dataset version (export_hf --dataset-version, the export form and job): only the
version's images; the card's Hub metadata (YAML front matter) from the version, or the defaults; and
`level` a datasets.ClassLabel whose values stay the levels 1-4."""
from __future__ import annotations

import io
from pathlib import Path

import datasets
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from huggingface_hub import DatasetCard

from annotations.models import Image
from core.models import AuditEvent
from scoring import exports
from scoring.models import ExportJob
from tests.support.dispatch import record_sends
from tests.support.exports import load, unzip
from tests.conftest import with_submission_token

# The export world's images (tests/support/exports.py) as VISPR images; cprt-paper takes 0 (face), 2 (safe), 3 (face).
VISPR = {"2017_00000": ("val2017", ["a9_face_complete"]), "2017_00001": ("val2017", ["a59_sports"]),
         "2017_00002": ("test2017", ["a0_safe"]), "2017_00003": ("test2017", ["a10_face_partial"]),
         "2017_00004": ("test2017", ["a59_sports"])}


@pytest.fixture
def version(world):
    for vispr_id, (split, labels) in VISPR.items():
        Image.objects.filter(vispr_id=vispr_id).update(vispr_split=split, vispr_labels=labels)
    call_command("build_dataset", "--recipe", "cprt-paper", "--vispr-split", "test", "--vispr-split", "train", "--name", "paper-both",
                 stdout=io.StringIO(), stderr=io.StringIO())
    from annotations.datasets.models import DatasetVersion
    return DatasetVersion.objects.get(name="paper-both")


def export_hf(*args) -> str:
    out = io.StringIO()
    call_command("export_hf", *args, "--profile", "models", stdout=out)
    return out.getvalue()


def card_of(folder: Path):
    return DatasetCard.load(folder / "README.md")


def test_export_hf_scoped_to_a_version_exports_only_its_images_with_its_metadata(version, tmp_path):
    export_hf(str(tmp_path / "hf"), "--dataset-version", "paper-both")
    ds = load(tmp_path / "hf", None, tmp_path / "cache")
    assert sorted(ds["train"]["id"]) == ["2017_00000"] and sorted(ds["test"]["id"]) == ["2017_00002", "2017_00003"]
    level = ds["test"].features["level"]
    assert isinstance(level, datasets.ClassLabel) and level.num_classes == 5
    assert level.int2str(1) == "1: Unique identifiers" and level.names[0] == "0: (unused)"
    assert all(1 <= value <= 4 for value in ds["test"]["level"])
    meta = card_of(tmp_path / "hf").data
    assert meta.pretty_name == "CPRT-Bench (paper recipe)" and meta.license == "other" and meta.language == ["en"]
    assert meta.task_categories == ["image-classification", "visual-question-answering"]
    assert meta.tags == ["privacy", "vispr", "cprt-bench"] and meta.size_categories == ["n<1K"]
    text = (tmp_path / "hf" / "README.md").read_text()
    assert "## Dataset version" in text and "`paper-both`" in text and "| safe | a0_safe (and nothing else) | — | 1 |" in text
    assert AuditEvent.objects.filter(action="export_hf").latest("id").data["dataset_version"] == "paper-both"


def test_an_unscoped_export_has_the_default_metadata_and_a_classlabel(world, tmp_path):
    export_hf(str(tmp_path / "hf"))
    ds = load(tmp_path / "hf", None, tmp_path / "cache")
    assert len(ds["train"]) + len(ds["test"]) == 5 and isinstance(ds["train"].features["level"], datasets.ClassLabel)
    meta = card_of(tmp_path / "hf").data
    assert meta.pretty_name == "CPRT-Bench (CPRT Workbench export)" and meta.license == "other"
    assert meta.task_categories == ["image-classification"] and meta.size_categories == ["n<1K"]
    assert "cprt-dataset-version" not in meta.tags and "## Dataset version" not in (tmp_path / "hf" / "README.md").read_text()


def test_a_version_without_a_hub_block_names_the_card_after_itself(version, tmp_path):
    recipe = dict(version.recipe)
    recipe.pop("hub")
    type(version).objects.filter(pk=version.pk).update(recipe=recipe)
    version.refresh_from_db()
    export_hf(str(tmp_path / "hf"), "--dataset-version", "paper-both")
    meta = card_of(tmp_path / "hf").data
    assert meta.pretty_name == "CPRT-Bench: paper-both" and "cprt-dataset-version" in meta.tags


def test_export_hf_refuses_an_unknown_version_and_writes_nothing(world, tmp_path):
    with pytest.raises(CommandError, match="--dataset-version: there is no dataset version named 'nope'"):
        export_hf(str(tmp_path / "hf"), "--dataset-version", "nope")
    assert not (tmp_path / "hf").exists()


def test_the_export_form_scopes_the_job_to_a_version(version, client_as, admin_user, export_root, monkeypatch, tmp_path):
    record_sends(monkeypatch)
    client = client_as(admin_user)
    page = client.get(reverse("scoring:exports") + "?dataset_version=paper-both").content.decode()
    assert '<option value="paper-both" selected>paper-both (3 images)</option>' in page
    data = {"splits": ["train", "test"], "profile": str(world_profile()), "destination": "zip", "dataset_version": "paper-both"}
    response = client.post(reverse("scoring:exports"), with_submission_token(data))
    assert response.status_code == 302
    job = ExportJob.objects.get()
    assert job.dataset_version == version
    assert exports.run_export(job.pk)["status"] == "finished"
    job.refresh_from_db()
    assert {s: stats["rows"] for s, stats in job.summary["splits"].items()} == {"train": 1, "test": 2}
    folder = unzip(job, export_root, tmp_path / "unzipped")
    assert card_of(folder).data.pretty_name == "CPRT-Bench (paper recipe)"
    detail = client.get(reverse("scoring:export", args=[job.pk])).content.decode()
    assert 'dataset version <strong id="export-dataset-version">paper-both</strong>' in detail


def world_profile() -> int:
    from scoring.models import ScoringProfile
    return ScoringProfile.objects.get(name="models").pk


def test_the_export_form_refuses_an_unknown_version(world, client_as, admin_user):
    data = {"splits": ["train", "test"], "profile": str(world["profile"].pk), "destination": "zip", "dataset_version": "gone"}
    response = client_as(admin_user).post(reverse("scoring:exports"), with_submission_token(data))
    assert response.status_code == 400 and "There is no dataset version named gone." in response.content.decode()
    assert not ExportJob.objects.exists()


# ---------------------------------------------------------------------------------------------
# Fine-tuning pairs (the SFT export) scoped to a version

SFT_VISPR = {"2017_101": ("val2017", ["a9_face_complete"]), "2017_102": ("val2017", ["a19_name_full"]),
             "2017_103": ("val2017", ["a59_sports"]), "2017_104": ("val2017", ["a0_safe"]),
             "2017_201": ("test2017", ["a31_passport"]), "2017_202": ("test2017", ["a59_sports"])}


@pytest.fixture
def sft_version(sft_world):
    for vispr_id, (split, labels) in SFT_VISPR.items():
        Image.objects.filter(vispr_id=vispr_id).update(vispr_split=split, vispr_labels=labels)
    call_command("build_dataset", "--recipe", "cprt-paper", "--vispr-split", "val2017", "--vispr-split", "test2017", "--name", "sft-v",
                 stdout=io.StringIO(), stderr=io.StringIO())
    return sft_world


def test_export_sft_scoped_to_a_version_pairs_only_its_images(sft_version, tmp_path):
    out = io.StringIO()
    call_command("export_sft", str(tmp_path / "sft"), "--format", "llamafactory", "--profile", "models", "--dataset-version", "sft-v", stdout=out)
    printed = out.getvalue()
    assert "  train: 3 pairs" in printed and "  evaluation: 1 pairs" in printed  # 101, 102, 104 / 201
    unscoped = io.StringIO()
    call_command("export_sft", str(tmp_path / "all"), "--format", "llamafactory", "--profile", "models", stdout=unscoped)
    assert "  train: 4 pairs" in unscoped.getvalue() and "  evaluation: 2 pairs" in unscoped.getvalue()
    with pytest.raises(CommandError, match="--dataset-version: there is no dataset version named 'gone'"):
        call_command("export_sft", str(tmp_path / "x"), "--format", "llamafactory", "--dataset-version", "gone", stdout=io.StringIO())
    assert not (tmp_path / "x").exists()


def test_the_sft_form_scopes_its_job(sft_version, client_as, admin_user, export_root, monkeypatch):
    record_sends(monkeypatch)
    client = client_as(admin_user)
    data = {"sft-format": "llamafactory", "sft-prompt_version": "", "sft-split": "train", "sft-profile": str(sft_version.pk),
            "sft-faces": "original", "sft-dataset_version": "gone"}
    from inference import prompts
    data["sft-prompt_version"] = prompts.DEFAULT_VERSION["judge"]
    refused = client.post(reverse("scoring:export_sft"), with_submission_token(data))
    assert refused.status_code == 400 and "There is no dataset version named gone." in refused.content.decode()
    assert not ExportJob.objects.exists()
    assert client.post(reverse("scoring:export_sft"), with_submission_token({**data, "sft-dataset_version": "sft-v"})).status_code == 302
    job = ExportJob.objects.get()
    assert job.kind == "sft" and job.dataset_version.name == "sft-v" and job.options["dataset_version"] == "sft-v"
    assert exports.run_export(job.pk)["status"] == "finished"
    job.refresh_from_db()
    assert job.summary["pairs"] == {"train": 3, "evaluation": 1} and job.summary["dataset_version"] == "sft-v"
