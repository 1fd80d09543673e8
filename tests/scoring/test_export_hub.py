"""Export jobs to the Hub (the real huggingface_hub SDK against a local fake Hub, from a job and from
`export_hf`) and no secret or account name in any byte of an export (zip or Hub)."""
from __future__ import annotations

import json
import zipfile

import pyarrow.parquet as pq
import pytest

from scoring import exports
from scoring.models import ExportJob
from tests.fakes.hf_hub_server import FakeHubServer
from tests.support.exports import HF_TOKEN, make_job, tree, unzip


# ---------------------------------------------------------------------------------------------
# Data


# ---------------------------------------------------------------------------------------------
# The Hub: the real SDK against a local fake Hub


@pytest.fixture
def hub(settings):
    with FakeHubServer(token=HF_TOKEN) as server:
        settings.HF_TOKEN = HF_TOKEN
        settings.HF_ENDPOINT = server.url
        yield server



@pytest.mark.django_db
@pytest.mark.parametrize("private", [True, False])
def test_a_hub_job_creates_the_repo_and_uploads_exactly_the_export(world, export_root, tmp_path, hub, private):
    job = make_job(world, destination="hub", repo_id="lab/cprt-bench", private=private)
    assert exports.run_export(job.pk)["status"] == "finished", ExportJob.objects.get(pk=job.pk).error
    job.refresh_from_db()
    repo = hub.repos["lab/cprt-bench"]
    assert repo.repo_type == "dataset" and repo.private is private
    assert job.hub_url == f"{hub.url}/datasets/lab/cprt-bench" and job.zip_path == ""
    assert not any((export_root / str(job.pk)).glob("*"))  # the working folder is gone; nothing stays for a Hub push
    # The same export as a zip: what arrived on the Hub is byte for byte what the zip holds.
    twin = make_job(world)
    exports.run_export(twin.pk)
    twin.refresh_from_db()
    assert repo.files == tree(unzip(twin, export_root, tmp_path / "twin"))
    assert set(repo.files) == {"README.md", "data/train.parquet", "data/test.parquet", "annotations/train.parquet", "annotations/test.parquet",
                               "predictions/train.parquet", "predictions/test.parquet", "images/train.parquet", "images/test.parquet"}
    assert repo.commits == [{"summary": "CPRT Workbench export", "description": ""}]
    assert [r["path"] for r in hub.requests] == [
        "/api/repos/create", "/api/validate-yaml", "/api/datasets/lab/cprt-bench/preupload/main", "/api/datasets/lab/cprt-bench/commit/main"]
    assert all(r["headers"]["authorization"] == f"Bearer {HF_TOKEN}" for r in hub.requests)
    assert not any(HF_TOKEN.encode() in content for content in repo.files.values())


@pytest.mark.django_db
def test_a_push_refused_by_the_hub_fails_the_job_without_showing_the_token(world, export_root, settings):
    with FakeHubServer(token="hf_the_hub_expects_another_token") as server:
        settings.HF_TOKEN, settings.HF_ENDPOINT = HF_TOKEN, server.url
        job = make_job(world, destination="hub", repo_id="lab/cprt-bench", include_images=False)
        exports.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.hub_url == ""
    assert job.error.startswith("Upload to lab/cprt-bench failed:") and "401" in job.error
    assert HF_TOKEN not in job.error
    assert not any((export_root / str(job.pk)).glob("*"))  # the working folder is gone; nothing stays for a Hub push


# ---------------------------------------------------------------------------------------------
# Never a secret in an export


SECRETS = {
    "OPENAI_API_KEY": "sk-OPENAI-s3cret-0123456789",
    "GEMINI_API_KEY": "AIzaGEMINI-s3cret-0123456789",
    "VLLM_API_KEY": "vllm-s3cret-0123456789",
    "HF_TOKEN": HF_TOKEN,
    "SECRET_KEY": "django-SECRET-KEY-s3cret-0123456789-abcdefghijklmnop",
}


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings_in(k) + strings_in(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings_in(v)]
    return []


@pytest.mark.django_db
def test_no_secret_and_no_account_name_in_any_byte_of_an_export(world, export_root, tmp_path, settings, hub):
    for name, value in SECRETS.items():
        setattr(settings, name, value)
    people = world["people"]
    job = make_job(world)  # everything included: annotations, predictions, images
    exports.run_export(job.pk)
    hub_job = make_job(world, destination="hub", repo_id="lab/cprt-bench")
    exports.run_export(hub_job.pk)
    job.refresh_from_db()
    hub_job.refresh_from_db()
    assert job.status == hub_job.status == "finished"

    forbidden = [*SECRETS.values(), "jane.doe", "example.org", "r.roe", "uni.example.net", "Doeling", "human:",
                 *(p.password for p in people)]
    zip_bytes = (export_root / job.zip_path).read_bytes()
    files = tree(unzip(job, export_root, tmp_path / "unzipped"))
    uploaded = hub.repos["lab/cprt-bench"].files
    assert files == uploaded and len(files) == 9
    decoded = []  # every string value of every parquet file, decompressed
    for path, content in files.items():
        if path.endswith(".parquet"):
            decoded += strings_in(pq.read_table(tmp_path / "unzipped" / f"cprt-bench-export-{job.pk}" / path).to_pylist())
    decoded_text = "\n".join(decoded)
    with zipfile.ZipFile(export_root / job.zip_path) as archive:
        names = "\n".join(archive.namelist())
    for secret in forbidden:
        needle = secret.encode()
        assert needle not in zip_bytes, f"{secret!r} in the zip"
        assert secret not in names
        for path, content in files.items():
            assert needle not in content, f"{secret!r} in {path}"
        assert secret not in decoded_text, f"{secret!r} in a parquet value"
        assert secret not in json.dumps(job.summary) and secret not in json.dumps(hub_job.summary)
    assert f"human-{world['humans'][0].pk}" in decoded_text  # the pseudonyms are there instead


@pytest.mark.django_db
def test_the_export_hf_command_pushes_every_configuration_through_the_sdk(world, tmp_path, hub):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("export_hf", str(tmp_path / "hf"), "--profile", "models", "--include-annotations", "--include-images",
                 "--push-to", "lab/cprt-cli", stdout=out)
    printed = out.getvalue()
    assert "train: 2 rows" in printed and "1 prediction rows; 2 images" in printed  # 2017_00000 was judged
    assert "test: 3 rows" in printed and "2 prediction rows; 3 images" in printed  # 2017_00002 and 2017_00003 were
    assert "Pushed to" in printed and "(private)" in printed
    repo = hub.repos["lab/cprt-cli"]
    assert repo.private and repo.files == tree(tmp_path / "hf")
    assert "images/test.parquet" in repo.files and "predictions/train.parquet" in repo.files
