"""export_hf / export_dataset: the Hugging Face layout, round trip through import and datasets.load_dataset."""
from __future__ import annotations

import io
from pathlib import Path

import datasets
import pytest
from django.core.management import CommandError, call_command

from annotations import taxonomy
from annotations.models import Annotator, Labeling
from core.models import AuditEvent
from scoring import cprt_bench, engine
from scoring.models import ScoringProfile
from scoring.services.scores import recompute_scores
from tests.conftest import make_user
from tests.support.bench_rows import TRUE_BOUNDS, make_rows, write_jsonl


def export(*args) -> str:
    out = io.StringIO()
    call_command("export_hf", *args, stdout=out)
    return out.getvalue()


def load(path: Path, cache: Path, name: str | None = None):
    return datasets.load_dataset(str(path), name, cache_dir=str(cache))


def all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.mark.django_db
def test_round_trip_import_fit_export_load(tmp_path):
    train, test = make_rows(150, seed=11), make_rows(250, seed=12)
    for r in train:
        r["id"] = r["id"].replace("2017_", "2017_9")  # distinct ids per split
    call_command("import_cprt", write_jsonl(tmp_path / "test.jsonl", test), "--split", "test", stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_cprt", write_jsonl(tmp_path / "train.jsonl", train), "--split", "train", "--profile", "cprt-bench", stdout=out)
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.bounds.lo == pytest.approx(TRUE_BOUNDS.lo, abs=1e-5)
    assert profile.fit_report["max_residual"] < 1e-5 and profile.is_active

    printed = export(str(tmp_path / "hf"))
    assert "train: 150 rows (150 published" in printed and "test: 250 rows" in printed
    ds = load(tmp_path / "hf", tmp_path / "cache")
    assert set(ds) == {"train", "test"}
    tax = taxonomy.active()
    for split, rows in (("train", train), ("test", test)):
        got = ds[split]
        assert got.column_names == ["id", "binary_labels", "level", "score"]
        assert got.features["level"].dtype == "int64" and got.features["score"].dtype == "float64"
        assert list(got.features["binary_labels"]) == ["level1", "level2", "level3", "level4"]
        for level in engine.LEVELS:
            assert list(got.features["binary_labels"][f"level{level}"]) == list(tax.keys_of_level(level))
        assert len(got) == len(rows)
        by_id = {r["id"]: r for r in rows}
        for row in got:
            want = by_id[row["id"]]
            assert row["binary_labels"] == want["binary_labels"]
            assert row["level"] == want["level"]
            assert row["score"] == want["score"]  # published values unchanged, bit for bit
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "cprt-bench` version 2" in card and "ground-truth:cprt-bench" in card
    assert "Images are not redistributed" in card and "PROVISIONAL" not in card
    assert AuditEvent.objects.filter(action="export_hf").count() == 1


@pytest.fixture
def model_profile(model_annotators):
    profile = ScoringProfile.objects.create(name="models", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test", weights=[330, 30, 5, 1])
    profile.consensus_annotators.set(model_annotators)
    return profile


@pytest.mark.django_db
def test_computed_rows_use_the_profile_and_images_without_score_are_counted(tmp_path, make_image, set_labels, model_annotators, model_profile):
    gpt, gemini = model_annotators
    scored = make_image("2017_1", split="train")
    set_labels(scored, gpt, {"biometrics": 1, "age": 1, "location": 0.5})
    set_labels(scored, gemini, {"biometrics": 1, "age": 1, "location": 1})
    half = make_image("2017_2", split="train", color=(1, 2, 3))
    set_labels(half, gpt, {"gender": 1})  # gemini missing: no consensus, no score
    make_image("2017_3", split="train", color=(4, 5, 6))  # no labels at all
    recompute_scores(model_profile)

    summary = cprt_bench.export_dataset(tmp_path / "hf", ["train"], model_profile)
    assert summary["splits"]["train"] | {"levels": None} == {
        "rows": 1, "published": 0, "computed": 1, "skipped_no_score": 2, "skipped_no_labels": 0, "levels": None
    }
    row = load(tmp_path / "hf", tmp_path / "cache")["train"][0]
    assert row["id"] == "2017_1"
    assert row["binary_labels"]["level1"]["biometrics"] == 1 and row["binary_labels"]["level3"]["age"] == 1
    assert row["binary_labels"]["level3"]["location"] == 0
    assert (row["level"], row["score"]) == engine.severity((1, 0, 1, 0), model_profile.bounds, model_profile.weights)
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "Warning: provisional boundaries" in card
    assert "model:openai/gpt-5.1@annotate-v1" in card and "model:gemini/gemini-3-flash@annotate-v1" in card


@pytest.mark.django_db
def test_annotations_configuration_without_personal_data_or_secrets(tmp_path, settings, make_image, set_labels, model_annotators, model_profile):
    settings.HF_TOKEN = "hf_SECRETtoken1234567890"
    user = make_user("jane.doe@example.org", "reviewer")
    user.email = "jane.doe@example.org"
    user.save()
    human = Annotator.for_user(user)
    drafter = Annotator.for_user(make_user("drafter", "reviewer"))
    gpt, gemini = model_annotators
    image = make_image("2017_5", split="test")
    set_labels(image, gpt, {"biometrics": 1})
    set_labels(image, gemini, {"biometrics": 1})
    set_labels(image, human, {"biometrics": 0.5})
    set_labels(image, drafter, {"biometrics": 1})
    Labeling.objects.create(image=image, annotator=drafter, status=Labeling.STATUS_DRAFT)
    gpt.labels.filter(attribute__key="biometrics").update(rationale="A clear frontal face.")
    recompute_scores(model_profile)

    summary = cprt_bench.export_dataset(tmp_path / "hf", ["test"], model_profile, include_annotations=True)
    assert summary["splits"]["test"]["annotation_rows"] == 3  # the draft labeling is left out
    ann = load(tmp_path / "hf", tmp_path / "cache", "annotations")["test"]
    names = sorted(ann["annotator"])
    assert names == sorted([f"human-{human.pk}", gpt.name, gemini.name])
    by_name = {r["annotator"]: r for r in ann}
    assert by_name[f"human-{human.pk}"]["labels"]["biometrics"] == 0.5
    assert by_name[f"human-{human.pk}"]["annotator_kind"] == "human"
    assert by_name[gpt.name]["rationales"]["biometrics"] == "A clear frontal face."
    assert by_name[gpt.name]["provider"] == "openai" and len(by_name[gpt.name]["labels"]) == 22
    exported = all_bytes(tmp_path / "hf")
    for secret in (b"jane.doe", b"example.org", b"hf_SECRET", b"drafter", user.password.encode()):
        assert secret not in exported


@pytest.mark.django_db
def test_progress_callback_reaches_the_total(tmp_path):
    call_command("import_cprt", write_jsonl(tmp_path / "t.jsonl", make_rows(1200)), "--split", "test", stdout=io.StringIO())
    calls = []
    cprt_bench.export_dataset(tmp_path / "hf", ["test"], progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (1200, 1200)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) == 3  # chunks of 500


@pytest.mark.django_db
def test_refuses_a_folder_that_is_not_an_export_and_replaces_a_previous_export(tmp_path):
    call_command("import_cprt", write_jsonl(tmp_path / "t.jsonl", make_rows(100)), "--split", "test", stdout=io.StringIO())
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError, match="not empty and is not a previous export"):
        export(str(other), "--split", "test")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    assert AuditEvent.objects.count() == events

    export(str(tmp_path / "hf"), "--split", "test")
    (tmp_path / "hf" / "data" / "stale.parquet").write_bytes(b"old")
    export(str(tmp_path / "hf"), "--split", "test")
    assert sorted(p.name for p in (tmp_path / "hf" / "data").iterdir()) == ["test.parquet"]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no staging folders left behind


@pytest.mark.django_db
def test_nothing_to_export_is_refused_and_writes_nothing(tmp_path, make_image):
    make_image("2017_7", split="train")  # no labels, no published score
    with pytest.raises(CommandError, match="Nothing to export"):
        export(str(tmp_path / "hf"), "--split", "train")
    assert not (tmp_path / "hf").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_unknown_profile_and_split_are_refused(tmp_path):
    with pytest.raises(CommandError, match="No scoring profile named 'nope'"):
        export(str(tmp_path / "hf"), "--profile", "nope")
    with pytest.raises(CommandError):
        export(str(tmp_path / "hf"), "--split", "validation")
    assert not (tmp_path / "hf").exists()


class FakeHfApi:
    calls: list = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, **kwargs):
        FakeHfApi.calls.append(("create_repo", self.token, kwargs))
        return f"https://huggingface.co/datasets/{kwargs['repo_id']}"

    def upload_folder(self, **kwargs):
        files = sorted(str(p.relative_to(kwargs["folder_path"])) for p in Path(kwargs["folder_path"]).rglob("*") if p.is_file())
        FakeHfApi.calls.append(("upload_folder", self.token, kwargs | {"files": files}))


@pytest.mark.django_db
def test_push_needs_a_token_before_anything_is_written(tmp_path, settings):
    settings.HF_TOKEN = ""
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError, match="set HF_TOKEN"):
        export(str(tmp_path / "hf"), "--push-to", "org/cprt")
    assert not (tmp_path / "hf").exists() and AuditEvent.objects.count() == events


@pytest.mark.django_db
@pytest.mark.parametrize("public", [False, True])
def test_push_creates_the_dataset_repo_and_uploads_the_folder(tmp_path, settings, monkeypatch, public):
    import huggingface_hub

    settings.HF_TOKEN = "hf_test_token"
    FakeHfApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHfApi)
    call_command("import_cprt", write_jsonl(tmp_path / "t.jsonl", make_rows(100)), "--split", "test", stdout=io.StringIO())
    out = export(str(tmp_path / "hf"), "--split", "test", "--push-to", "org/cprt", *(["--public"] if public else []))
    (create, token, kwargs), (upload, token2, kwargs2) = FakeHfApi.calls
    assert create == "create_repo" and token == "hf_test_token"
    assert kwargs == {"repo_id": "org/cprt", "repo_type": "dataset", "private": not public, "exist_ok": True}
    assert upload == "upload_folder" and kwargs2["repo_type"] == "dataset" and kwargs2["repo_id"] == "org/cprt"
    assert kwargs2["files"] == ["README.md", "data/test.parquet"]
    assert ("public" if public else "private") in out
    assert b"hf_test_token" not in all_bytes(tmp_path / "hf")
