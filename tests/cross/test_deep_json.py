"""A 200 KB JSON nested 100,000 deep, given to every reader of outside JSON that is not tested beside
its command (CPRT-Bench and score_labels: test_malformed_commands.py; SPY-Bench: spy/test_spy_deep_json.py):
refused with one line naming the file, no RecursionError, nothing written."""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Image, Label
from benchmarks.multipriv.models import Person, PersonImage
from tests.conftest import png_bytes
from tests.support.stored import changed, stored_data
from tests.support.vispr_release import write_release

DEEP = b"[" * 100_000 + b"]" * 100_000
TOO_DEEP = "nested too deeply (more than 100 levels"

pytestmark = pytest.mark.django_db


def one_line_refusal(exc: BaseException) -> str:
    text = str(exc)
    assert "RecursionError" not in text and "Traceback" not in text
    return next(line for line in text.splitlines() if TOO_DEEP in line)


def test_import_multipriv_refuses_a_deep_profile(tmp_path):
    person = tmp_path / "MultiPriv-PII" / "VLM" / "individual-level" / "person_1"
    person.mkdir(parents=True)
    (person / "A1.png").write_bytes(png_bytes())
    (person / "person_1.json").write_bytes(DEEP)
    with pytest.raises(CommandError) as exc:
        call_command("import_multipriv", str(tmp_path / "MultiPriv-PII"), stdout=io.StringIO())
    assert "person_1" in one_line_refusal(exc.value) and "nothing was written" in str(exc.value)
    assert Person.objects.count() == PersonImage.objects.count() == 0


def test_import_vispr_refuses_a_deep_annotation_file(tmp_path):
    root = write_release(tmp_path / "vispr", {"test2017": {"2017_10000001": ["a4_gender"]}})
    (root / "annotations/test2017/2017_10000001.json").write_bytes(DEEP)
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("import_vispr", str(root), stdout=io.StringIO(), stderr=io.StringIO())
    assert "annotations/test2017/2017_10000001.json" in one_line_refusal(exc.value)
    assert not Image.objects.exists() and changed(before, stored_data()) == []


def test_vispr_labels_refuses_a_deep_mapping_file(tmp_path, settings):
    path = tmp_path / "mapping.json"
    path.write_bytes(DEEP)
    settings.CPRT_VISPR_MAPPING_FILE = path
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("vispr_labels", "--rewrite", stdout=io.StringIO())
    assert str(path) in one_line_refusal(exc.value)
    assert not Label.objects.exists() and changed(before, stored_data()) == []


def test_build_dataset_refuses_a_deep_recipe(tmp_path):
    path = tmp_path / "recipe.json"
    path.write_bytes(DEEP)
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("build_dataset", "--recipe", str(path), "--name", "v", stdout=io.StringIO(), stderr=io.StringIO())
    assert "recipe file is not valid JSON" in one_line_refusal(exc.value)
    assert changed(before, stored_data()) == []


def test_a_batch_output_file_refuses_a_deep_line_alone():
    from inference.providers.batch_types import iter_jsonl

    lines = list(iter_jsonl(io.BytesIO(b'{"custom_id": "a"}\n' + DEEP + b"\n" + b'{"custom_id": "b"}\n')))
    assert [(n, value) for n, value, _ in lines] == [(1, {"custom_id": "a"}), (2, None), (3, {"custom_id": "b"})]
    assert TOO_DEEP in lines[1][2] and "truncated" not in lines[1][2]


def test_register_classifier_refuses_deep_preprocessing_metadata(settings, tmp_path):
    from inference.models import ClassifierModel
    from tests.support.classifiers import tiny_classifier

    settings.DATA_DIR = tmp_path / "data"
    source = tiny_classifier(tmp_path / "deep.onnx", metadata={"cprt.classes": "private,public", "cprt.preprocessing": DEEP.decode()})
    with pytest.raises(CommandError) as exc:
        call_command("register_classifier", "deep", str(source), stdout=io.StringIO())
    assert "cprt.preprocessing metadata is not valid JSON" in one_line_refusal(exc.value)
    assert not ClassifierModel.objects.exists()
    assert not (settings.DATA_DIR / "classifiers").exists() or not any((settings.DATA_DIR / "classifiers").iterdir())
