"""Exports with faces removed: the `images` configuration carries the anonymized variants, never the
original in their place, and the dataset card says so; the export form and job record the setting."""
from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from annotations.faces import jobs
from annotations.faces.models import FaceVariant
from annotations.models import Annotator
from scoring import cprt_bench, exports
from scoring.forms import ExportJobForm
from scoring.models import ExportJob, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support import faces as photos
from tests.support.dispatch import record_sends

SETTING = {"method": "pixelate", "threshold": 0.5, "margin": 0.2}


@pytest.fixture
def world(db, make_image, set_labels):
    gpt = Annotator.for_model("openai", "gpt-5.1", "annotate-v1")
    profile = ScoringProfile.objects.create(name="models", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test", weights=[330, 30, 5, 1])
    profile.consensus_annotators.set([gpt])
    astro = photos.store("2017_exp_astro", photos.encoded(photos.astronaut()))
    coffee = photos.store("2017_exp_coffee", photos.encoded(photos.coffee()))
    job = jobs.start_job(None, dispatch_task=False, **SETTING)
    assert jobs.run_job(job.pk)["status"] == "finished"
    late = make_image("2017_exp_no_variant", color=(3, 4, 5))  # came after the anonymization: no variant
    for image in (astro, coffee, late):
        set_labels(image, gpt, {"biometrics": 1, "age": 1})
    recompute_scores(profile)
    return {"profile": profile, "astro": astro, "coffee": coffee, "late": late}


def _read(field) -> bytes:
    with field.storage.open(field.name, "rb") as fh:
        return fh.read()


def test_images_configuration_carries_the_variants_and_the_card_says_so(world, tmp_path):
    summary = cprt_bench.export_dataset(tmp_path / "out", ["test"], world["profile"], include_images=True, face_variant=SETTING)
    table = pq.read_table(tmp_path / "out" / "images" / "test.parquet").to_pylist()
    exported = {row["id"]: row["image"]["bytes"] for row in table}
    assert set(exported) == {"2017_exp_astro", "2017_exp_coffee"}  # the image without a variant is left out
    astro_variant = FaceVariant.objects.get(image=world["astro"])
    assert exported["2017_exp_astro"] == _read(astro_variant.file) != _read(world["astro"].file)
    assert summary["splits"]["test"]["rows"] == 3 and summary["splits"]["test"]["rows_without_image"] == 1
    card = (tmp_path / "out" / "README.md").read_text()
    assert "This export contains images with faces removed." in card and "pixelated with a margin of 0.2" in card
    assert "face-anonymized variants (faces removed), not the originals" in card


def test_without_a_setting_the_originals_are_exported(world, tmp_path):
    cprt_bench.export_dataset(tmp_path / "out", ["test"], world["profile"], include_images=True)
    table = pq.read_table(tmp_path / "out" / "images" / "test.parquet").to_pylist()
    assert {row["id"]: row["image"]["bytes"] for row in table}["2017_exp_astro"] == _read(world["astro"].file)
    assert "faces removed" not in (tmp_path / "out" / "README.md").read_text()


def test_export_form_and_job_record_the_setting(world, admin_user, settings, tmp_path, monkeypatch):
    settings.CPRT_EXPORT_ROOT = tmp_path / "exports"
    base = {"splits": ["test"], "profile": world["profile"].pk, "destination": "zip", "include_images": "on"}
    form = ExportJobForm({**base, "face_variant": "pixelate:0.5:0.2"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["face_variant"] == SETTING
    refused = ExportJobForm({**base, "include_images": "", "face_variant": "pixelate:0.5:0.2"})
    assert not refused.is_valid() and "only with" in str(refused.errors["face_variant"])
    assert not ExportJobForm({**base, "face_variant": "blur:0.5:0.2"}).is_valid()  # no such variants
    record_sends(monkeypatch)
    job = exports.start_export(admin_user, form.cleaned_data)
    assert job.face_variant == SETTING
    assert exports.run_export(job.pk)["status"] == ExportJob.STATUS_FINISHED
    job.refresh_from_db()
    assert job.summary["face_variant"] == SETTING and job.summary["anonymized_images"] == 2


def test_export_hf_command_exports_the_variants(world, tmp_path):
    out = io.StringIO()
    call_command("export_hf", str(tmp_path / "out"), "--split", "test", "--profile", "models", "--include-images",
                 "--face-variant", "pixelate:0.5:0.2", stdout=out)
    table = pq.read_table(tmp_path / "out" / "images" / "test.parquet").to_pylist()
    assert {row["id"]: row["image"]["bytes"] for row in table}["2017_exp_astro"] == _read(FaceVariant.objects.get(image=world["astro"]).file)
    assert len(table) == 2 and "faces pixelate, threshold 0.5, margin 0.2" in out.getvalue()
    assert "faces removed" in (tmp_path / "out" / "README.md").read_text()


@pytest.mark.parametrize("args,message", [
    (["--face-variant", "pixelate:0.5:0.2"], "add --include-images"),
    (["--include-images", "--face-variant", "pixelate:0.5"], "method:threshold:margin"),
    (["--include-images", "--face-variant", "melt:0.5:0.2"], "melt"),
    (["--include-images", "--face-variant", "pixelate:2:0.2"], "threshold must be"),
    (["--include-images", "--face-variant", "blur:0.5:0.2"], "No image has a face-anonymized variant under blur:0.5:0.2"),
])
def test_export_hf_command_refuses_a_bad_face_variant_and_writes_nothing(world, tmp_path, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("export_hf", str(tmp_path / "out"), "--split", "test", *args)
    assert not (tmp_path / "out").exists()
