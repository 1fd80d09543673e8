"""export_sft: each format read back by what its tool uses, answers parse with the judge parser to
the ground truth, split hygiene, and clear refusals that write nothing."""
from __future__ import annotations

import io
import json

import datasets
import pytest
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotations import taxonomy
from annotations.models import Image
from core.models import AuditEvent
from inference import kinds, prompts
from inference.providers.base import ProviderReply
from inference.schemas import JudgeAnswer, Stage1Answer, Stage2Answer
from scoring.models import ImageScore
from scoring.sft import export, images as sft_images, writers
from tests.support.reference import stated_level
from tests.conftest import png_bytes
from tests.scoring.conftest import SFT_TEST, SFT_TRAIN
from tests.scoring.openai_chat_finetune import ChatFineTuningLine



def run_prompt() -> dict:
    """What a taxonomy judge run of the default version stores and sends (Run.prompt_text["judge"])."""
    return kinds.render("judge", prompts.DEFAULT_VERSION["judge"], "taxonomy", False)["judge"]


def run(*args) -> str:
    out = io.StringIO()
    call_command("export_sft", *args, stdout=out)
    return out.getvalue()


def ground_truth(profile) -> dict[str, tuple[int, float]]:
    return {s.image.vispr_id: (s.level, s.score) for s in ImageScore.objects.filter(profile=profile).select_related("image")}


def parse_judge(text: str) -> JudgeAnswer:
    """The project's own path for a judge reply: strict JSON object, then the JudgeAnswer schema."""
    reply = ProviderReply(text=text, raw={})
    assert reply.parse_error == ""
    return JudgeAnswer.model_validate(reply.parsed)


def assert_matches_ground_truth(vispr_id: str, response: str, truth: dict) -> None:
    answer = parse_judge(response)
    level, score = truth[vispr_id]
    assert answer.score == score
    assert stated_level(answer.reasoning) == level
    assert answer.reasoning.count(". ") <= 2  # at most three sentences, as the judge prompt asks


@pytest.mark.django_db
@pytest.mark.parametrize("include_images", [False, True])
def test_hf_loads_with_datasets_in_trl_vlm_format(tmp_path, sft_world, include_images):
    args = [str(tmp_path / "hf"), "--format", "hf", "--profile", "models"] + (["--include-images"] if include_images else [])
    printed = run(*args)
    assert "train: 4 pairs" in printed and "evaluation: 2 pairs" in printed
    train = datasets.load_dataset(str(tmp_path / "hf"), split="train", cache_dir=str(tmp_path / "cache"))
    evaluation = datasets.load_dataset(str(tmp_path / "hf"), "evaluation", split="test", cache_dir=str(tmp_path / "cache"))
    assert set(train["id"]) == set(SFT_TRAIN) and set(evaluation["id"]) == set(SFT_TEST)
    assert isinstance(train.features["images"], datasets.List) and isinstance(train.features["images"].feature, datasets.Image)
    if not include_images:  # paths to place the VISPR files at; decoding would open them
        train = train.cast_column("images", datasets.List(datasets.Image(decode=False)))
    truth = ground_truth(sft_world)
    for row in train:
        system, user, assistant = row["messages"]
        assert (system["role"], user["role"], assistant["role"]) == ("system", "user", "assistant")
        assert system["content"] == [{"type": "text", "text": run_prompt()["system"]}]
        assert user["content"] == [{"type": "text", "text": run_prompt()["user"]}, {"type": "image", "text": None}]
        assert_matches_ground_truth(row["id"], assistant["content"][0]["text"], truth)
        (image,) = row["images"]
        if include_images:
            assert isinstance(image, PILImage.Image) and image.size == (32, 24)
        else:
            assert image == {"bytes": None, "path": f"images/{row['id']}.jpg"}
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "Warning: provisional boundaries" in card and "`models` version 1 (PROVISIONAL)" in card
    assert "Evaluation file (split `test`, never train on it)" in card and "| train | train | 1 | 1 | 1 | 1 | 4 | 0 |" in card
    assert ("This export contains images" in card) is include_images
    assert AuditEvent.objects.filter(action="export_sft").count() == 1


@pytest.mark.django_db
def test_llamafactory_files_follow_the_documented_sharegpt_keys(tmp_path, sft_world):
    run(str(tmp_path / "lf"), "--format", "llamafactory", "--profile", "models", "--include-images", "--annotation-stages")
    root = tmp_path / "lf"
    info = json.loads((root / "dataset_info.json").read_text())
    assert set(info) == {"cprt_judge_train", "cprt_judge_evaluation_test"}
    truth = ground_truth(sft_world)
    keys = taxonomy.active().keys
    for name, entry in info.items():
        assert entry["formatting"] == "sharegpt" and entry["columns"] == {"messages": "messages", "images": "images"}
        tags = entry["tags"]
        assert tags == {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant", "system_tag": "system"}
        rows = datasets.load_dataset("json", data_files=str(root / entry["file_name"]), split="train", cache_dir=str(tmp_path / "cache"))
        assert len(rows) == 3 * (4 if name.endswith("train") else 2)  # judge + two annotation stages per image
        for row in rows:
            roles = [m[tags["role_tag"]] for m in row["messages"]]
            assert roles == [tags["system_tag"], tags["user_tag"], tags["assistant_tag"]]
            user, answer = row["messages"][1][tags["content_tag"]], row["messages"][2][tags["content_tag"]]
            assert user.count("<image>") == len(row["images"])
            for path in row["images"]:
                assert (root / path).is_file() and path == f"images/{row['id']}.png"
            if row["task"] == "judge":
                assert user == run_prompt()["user"] + "<image>" and row["messages"][0]["content"] == run_prompt()["system"]
                assert_matches_ground_truth(row["id"], answer, truth)
            elif row["task"] == "stage1":
                assert Stage1Answer.model_validate(json.loads(answer), context={"keys": keys})
            else:
                labels = Stage2Answer.model_validate(json.loads(answer), context={"keys": keys}).labels
                present = SFT_TRAIN.get(row["id"], SFT_TEST.get(row["id"]))
                assert {k for k, v in labels.items() if v == 1} == set(present)


@pytest.mark.django_db
def test_openai_lines_validate_against_the_chat_fine_tuning_format(tmp_path, sft_world):
    run(str(tmp_path / "oa"), "--format", "openai", "--profile", "models", "--include-images")
    truth = ground_truth(sft_world)
    for name, expected in (("train.jsonl", SFT_TRAIN), ("evaluation-test.jsonl", SFT_TEST)):
        lines = (tmp_path / "oa" / name).read_text().splitlines()
        assert len(lines) == len(expected)
        for vispr_id, raw in zip(sorted(expected), lines):
            line = ChatFineTuningLine.model_validate_json(raw)
            system, user, assistant = line.messages
            assert system.content == run_prompt()["system"] and user.content[0].text == run_prompt()["user"]
            assert user.content[1].image_url.url.startswith("data:image/png;base64,")
            assert_matches_ground_truth(vispr_id, assistant.content, truth)
    assert not (tmp_path / "oa" / "excluded.jsonl").exists()


@pytest.mark.django_db
def test_openai_pairs_over_the_documented_limits_are_listed_not_dropped(tmp_path, sft_world, monkeypatch):
    big = Image.objects.get(vispr_id="2017_104")
    monkeypatch.setattr(writers, "OPENAI_MAX_IMAGE_BYTES", big.file.size - 1)  # every stored png is the same size
    with pytest.raises(CommandError, match="every training pair was left out"):
        run(str(tmp_path / "oa"), "--format", "openai", "--profile", "models", "--include-images")
    assert not (tmp_path / "oa").exists()
    monkeypatch.setattr(writers, "OPENAI_MAX_IMAGE_BYTES", big.file.size)
    monkeypatch.setattr(writers, "OPENAI_MAX_IMAGE_EXAMPLES", 3)
    printed = run(str(tmp_path / "oa"), "--format", "openai", "--profile", "models", "--include-images")
    assert "train: 3 pairs" in printed and "1 left out" in printed
    excluded = [json.loads(line) for line in (tmp_path / "oa" / "excluded.jsonl").read_text().splitlines()]
    assert excluded == [{"part": "train", "id": "2017_104", "task": "judge",
                         "reason": "the file already holds 3 examples with images, OpenAI's limit"}]
    assert "- train `2017_104` (judge): the file already holds 3 examples" in (tmp_path / "oa" / "README.md").read_text()


@pytest.mark.django_db
def test_identical_bytes_on_both_sides_are_refused_and_nothing_is_written(tmp_path, sft_world, make_image):
    twin = make_image("2017_299", split="test", color=(10, 90, 200))  # the bytes of train image 2017_102
    assert twin.sha256 == Image.objects.get(vispr_id="2017_102").sha256
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError) as refused:
        run(str(tmp_path / "hf"), "--format", "hf", "--profile", "models")
    assert "1 image would appear on both the training and the evaluation side" in str(refused.value)
    assert "2017_102 (train) has the same bytes as 2017_299 (test)" in str(refused.value)
    assert list(tmp_path.iterdir()) == [] and AuditEvent.objects.count() == events


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["hf", "llamafactory"])
def test_the_evaluation_file_holds_exactly_the_test_split_and_no_training_id(tmp_path, sft_world, fmt):
    summary = export.export_sft(tmp_path / fmt, fmt, profile=sft_world)
    root = tmp_path / fmt
    if fmt == "hf":
        ids = {part: set(datasets.load_dataset("parquet", data_files=str(root / path), split="train")["id"])
               for part, path in summary["files"].items()}
    else:
        ids = {part: {r["id"] for r in json.loads((root / path).read_text())} for part, path in summary["files"].items()}
    assert ids["evaluation"] == set(SFT_TEST) and ids["train"] == set(SFT_TRAIN)
    assert not ids["evaluation"] & set(Image.objects.filter(split="train").values_list("vispr_id", flat=True))
    assert summary["splits"]["train"]["skipped_no_score"] == 1  # 2017_105 has no labels


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "csv"], "Unknown format 'csv': use hf, llamafactory, openai"),
        (["--format", "hf", "--prompt-version", "judge-v0"], "Unknown judge prompt version 'judge-v0'"),
        (["--format", "hf", "--split", "test"], "The test split is the evaluation side and never training data"),
        (["--format", "hf", "--split", "validation"], "Unknown training split 'validation'"),
        (["--format", "openai"], "The openai format embeds every image in the file (as a data URL): include the images"),
        (["--format", "hf", "--faces", "blur:0.5:0.2"], "Face-anonymized images only make sense with the images included"),
        (["--format", "hf", "--faces", "blur:0.5:0.2", "--include-images"], "Face-anonymized variants are not available in this installation"),
        (["--format", "hf", "--profile", "nope"], "No scoring profile named 'nope'"),
        (["--format", "hf", "--split", "other"], "Nothing to export: no image of the other split has a ground-truth score"),
    ],
)
def test_bad_options_and_an_empty_selection_are_refused_and_write_nothing(tmp_path, sft_world, monkeypatch, args, message):
    monkeypatch.setattr(sft_images, "face_variants", lambda: None)  # the face-anonymization package absent
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError) as refused:
        run(str(tmp_path / "out"), *args, *([] if "--profile" in args else ["--profile", "models"]))
    assert message in str(refused.value)
    assert list(tmp_path.iterdir()) == [] and AuditEvent.objects.count() == events


@pytest.mark.django_db
def test_a_folder_that_is_not_an_sft_export_is_refused_and_a_previous_one_replaced(tmp_path, sft_world):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(CommandError, match="not empty and is not a previous SFT export"):
        run(str(mine), "--format", "hf", "--profile", "models")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    run(str(tmp_path / "out"), "--format", "llamafactory", "--profile", "models")
    run(str(tmp_path / "out"), "--format", "hf", "--profile", "models")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["README.md", "data", "evaluation"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "out"]  # no staging folder left


class FakeFaceVariants:
    """What the SFT export uses of annotations.faces.variants (the face-anonymization package)."""

    KEY, SETTING = "blur:0.5:0.2", {"method": "blur", "threshold": 0.5, "margin": 0.2}

    def __init__(self, files: dict[int, str]):
        self.files = files

    def parse_setting_key(self, key):
        if key != self.KEY:
            raise ValueError("an anonymization setting is written method:threshold:margin (e.g. blur:0.5:0.2)")
        return dict(self.SETTING)

    def variant_files(self, image_ids, setting):
        assert setting == self.SETTING
        return {i: name for i, name in self.files.items() if i in set(image_ids)}

    def available_settings(self):
        return [(self.KEY, "faces blur, threshold 0.5, margin 0.2 (1 images)", 1)]


@pytest.mark.django_db
def test_face_anonymized_variants_come_through_the_seam_and_images_without_one_are_listed(tmp_path, sft_world, monkeypatch):
    monkeypatch.setattr(sft_images, "face_variants", lambda: None)
    with pytest.raises(CommandError, match="Face-anonymized variants are not available in this installation"):
        run(str(tmp_path / "out"), "--format", "llamafactory", "--profile", "models", "--include-images", "--faces", "blur:0.5:0.2")
    assert list(tmp_path.iterdir()) == []

    storage = Image._meta.get_field("file").storage
    name = storage.save("variants/2017_101-blur.jpg", ContentFile(b"ANONYMIZED-101"))
    fake = FakeFaceVariants({Image.objects.get(vispr_id="2017_101").pk: name})
    monkeypatch.setattr(sft_images, "face_variants", lambda: fake)
    with pytest.raises(CommandError, match=r"Unknown faces option 'blur:0\.9:0\.2'"):
        run(str(tmp_path / "out"), "--format", "llamafactory", "--profile", "models", "--include-images", "--faces", "blur:0.9:0.2")
    summary = export.export_sft(tmp_path / "out", "llamafactory", profile=sft_world, include_images=True, faces=fake.KEY)
    assert (tmp_path / "out" / "images" / "2017_101.jpg").read_bytes() == b"ANONYMIZED-101"
    assert sorted(p.name for p in (tmp_path / "out" / "images").iterdir()) == ["2017_101.jpg"]  # never an original instead
    assert summary["images"] == {"anonymized": 1, "original": 0} and summary["pairs"] == {"train": 1, "evaluation": 0}
    assert {row["id"]: row["reason"] for row in summary["excluded"]["train"]} == {
        vid: "image unavailable: no face-anonymized variant under blur:0.5:0.2" for vid in ("2017_102", "2017_103", "2017_104")
    }
    card = (tmp_path / "out" / "README.md").read_text()
    assert "the face-anonymized variants under `blur:0.5:0.2` (images without one are left out and listed) (1 anonymized, 0 original)" in card


@pytest.mark.django_db
def test_face_anonymized_variants_of_the_face_package_are_exported(tmp_path, sft_world):
    from annotations.faces import variants
    from annotations.images import clean_image

    image = Image.objects.get(vispr_id="2017_104")
    blurred = clean_image(png_bytes(color=(7, 7, 7)))
    variant, _ = variants.store(image, "blur", 0.5, 0.2, variants.Computed(clean=blurred, boxes=[], residual_boxes=[]))
    summary = export.export_sft(tmp_path / "out", "openai", profile=sft_world, include_images=True, faces="blur:0.5:0.2")
    assert summary["pairs"] == {"train": 1, "evaluation": 0} and summary["images"] == {"anonymized": 1, "original": 0}
    line = ChatFineTuningLine.model_validate_json((tmp_path / "out" / "train.jsonl").read_text())
    assert line.messages[1].content[1].image_url.url == writers.data_url(blurred.data, "png")
    assert variant.file.name.endswith(".png") and blurred.data != image.file.read()


@pytest.mark.django_db
def test_progress_reaches_the_total(tmp_path, sft_world):
    calls = []
    export.export_sft(tmp_path / "out", "hf", profile=sft_world, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (14, 14)  # 5 train + 2 test images, selected then written
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


@pytest.mark.django_db
def test_the_world_covers_every_level(sft_world):
    assert sorted(level for level, _ in ground_truth(sft_world).values()) == [1, 1, 2, 3, 3, 4]


@pytest.mark.django_db
def test_a_scored_image_without_stored_bytes_is_listed_when_images_are_included(tmp_path, sft_world, make_image, set_labels, model_annotators):
    bare = make_image("2017_106", split="train", with_file=False)
    for annotator in model_annotators:
        set_labels(bare, annotator, {"nudity": 1})
    from scoring.services.scores import recompute_scores

    recompute_scores(sft_world)
    summary = export.export_sft(tmp_path / "out", "hf", profile=sft_world, include_images=True)
    assert summary["pairs"]["train"] == 4
    assert summary["excluded"]["train"] == [{"id": "2017_106", "task": "judge", "reason": "image unavailable: no stored bytes"}]
    listed = [json.loads(line) for line in (tmp_path / "out" / "excluded.jsonl").read_text().splitlines()]
    assert listed == [{"part": "train", "id": "2017_106", "task": "judge", "reason": "image unavailable: no stored bytes"}]


def _encoded(mode: str, fmt: str) -> bytes:
    buf = io.BytesIO()
    PILImage.new(mode, (8, 8)).save(buf, format=fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    "data, problem",
    [
        (_encoded("RGB", "PNG"), None),
        (_encoded("RGBA", "PNG"), None),
        (_encoded("RGB", "JPEG"), None),
        (_encoded("RGB", "WEBP"), None),
        (_encoded("L", "PNG"), "the image mode is L; OpenAI accepts RGB or RGBA"),
        (_encoded("P", "GIF"), "the image is gif; OpenAI accepts JPEG, PNG or WEBP"),
        (b"not an image", "the image cannot be read (UnidentifiedImageError)"),
        (b"\xff" * (10 * 1024 * 1024 + 1), "the image is 10,485,761 bytes; OpenAI accepts at most 10 MB (10,485,760 bytes) per image"),
    ],
)
def test_openai_image_limits(data, problem):
    assert writers.openai_image_problem(data, "png") == problem
