"""Local classifiers (issue 26): `register_classifier` accepts S2P's interface and refuses everything else
(nothing stored), and binary runs go through the job engine with the onnx provider: P(private) per image
as computed by hand, batched, once per image, cost 0; refusals at launch name the field."""
from __future__ import annotations

import json
import threading
import time
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from core.models import AuditEvent
from inference import launching
from inference.execution import run_chunk
from inference.models import ClassifierModel, Run, RunResult
from inference.providers.onnx.batcher import Batcher
from inference.selection import Selection
from onnx import TensorProto
from tests.support.classifiers import expected_p_private, tiny_classifier

pytestmark = pytest.mark.django_db

COLORS = [(250, 10, 10), (10, 10, 250), (128, 128, 128), (200, 180, 20), (20, 200, 200), (0, 0, 0)]


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


def stored(data_dir: Path) -> list[str]:
    folder = data_dir / "classifiers"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def register(*args) -> str:
    out = StringIO()
    call_command("register_classifier", *map(str, args), stdout=out)
    return out.getvalue()


def image_bytes(image) -> bytes:
    with image.file.open("rb") as fh:
        return fh.read()


# --- registering ------------------------------------------------------------------------------

def test_a_model_of_s2ps_interface_is_registered_under_the_data_folder(data_dir, tmp_path):
    source = tiny_classifier(tmp_path / "tiny.onnx")
    out = register("tiny-s2p", source, "--classes", "private,public", "--json")
    model = ClassifierModel.objects.get(name="tiny-s2p")
    assert json.loads(out)["sha256"] == model.sha256
    assert model.input_shape == [None, 3, 448, 448] and model.output_kind == "probabilities"
    assert model.classes == ["private", "public"] and model.private_index == 0
    assert model.preprocessing["resize"] == [448, 448] and model.preprocessing["mean"] == [0.485, 0.456, 0.406]
    assert model.path.read_bytes() == source.read_bytes() and model.path.parent == data_dir / "classifiers"
    assert AuditEvent.objects.filter(action="classifier.register").count() == 1


def test_the_class_order_and_output_kind_come_from_the_files_metadata_when_not_given(data_dir, tmp_path):
    source = tiny_classifier(tmp_path / "meta.onnx", softmax=False,
                             metadata={"cprt.classes": "public,private", "cprt.output": "logits", "cprt.source": "converted by a test"})
    register("from-meta", source)
    model = ClassifierModel.objects.get(name="from-meta")
    assert model.classes == ["public", "private"] and model.output_kind == "logits" and model.source == "converted by a test"


def test_a_fixed_batch_of_one_is_accepted(data_dir, tmp_path):
    register("fixed", tiny_classifier(tmp_path / "fixed.onnx", batch=1), "--classes", "private,public")
    assert ClassifierModel.objects.get(name="fixed").batch_size == 1


BAD_MODELS = [
    ("wrong input shape", dict(chw=(3, 224, 224)), [], "must be N x 3 x 448 x 448 float"),
    ("one channel", dict(chw=(1, 448, 448)), [], "it is N x 1 x 448 x 448"),
    ("integer input", dict(input_type=TensorProto.UINT8), [], "tensor(uint8)"),
    ("three classes", dict(out_classes=3), [], "must be N x 2"),
    ("two outputs", dict(two_outputs=True), [], "exactly one output"),
    ("logits said to be probabilities", dict(softmax=False), [], "pass --output logits"),
    ("no class order", dict(), None, "Say the order of the output's columns with --classes"),
    ("a class twice", dict(), ["--classes", "private,private"], "must name private and public once each"),
]


@pytest.mark.parametrize("what,build,extra,message", BAD_MODELS, ids=[b[0] for b in BAD_MODELS])
def test_a_model_of_another_interface_is_refused_and_nothing_is_stored(data_dir, tmp_path, what, build, extra, message):
    source = tiny_classifier(tmp_path / "bad.onnx", **build)
    args = ["--classes", "private,public"] if extra == [] else (extra or [])
    with pytest.raises(CommandError, match="Not registered") as refused:
        register("bad", source, *args)
    assert message in str(refused.value)
    assert not ClassifierModel.objects.exists() and stored(data_dir) == []


def test_a_file_that_is_not_onnx_is_refused(data_dir, tmp_path):
    source = tmp_path / "weights.onnx"
    source.write_bytes(b"PK\x03\x04 this is a torch checkpoint, not an ONNX graph")
    with pytest.raises(CommandError, match="is not an ONNX model onnxruntime can load"):
        register("bad", source, "--classes", "private,public")
    whole = tiny_classifier(tmp_path / "whole.onnx").read_bytes()
    (tmp_path / "truncated.onnx").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(CommandError, match="is not an ONNX model onnxruntime can load"):
        register("bad", tmp_path / "truncated.onnx", "--classes", "private,public")
    with pytest.raises(CommandError, match="is not a readable file"):
        register("bad", tmp_path / "missing.onnx", "--classes", "private,public")
    assert not ClassifierModel.objects.exists() and stored(data_dir) == []


def test_a_duplicate_name_is_refused_and_the_first_model_is_kept(data_dir, tmp_path):
    register("tiny-s2p", tiny_classifier(tmp_path / "a.onnx"), "--classes", "private,public")
    first = ClassifierModel.objects.get()
    files = stored(data_dir)
    with pytest.raises(CommandError, match="A classifier named 'tiny-s2p' is already registered"):
        register("tiny-s2p", tiny_classifier(tmp_path / "b.onnx", softmax=False), "--classes", "public,private", "--output", "logits")
    assert list(ClassifierModel.objects.all()) == [first] and ClassifierModel.objects.get().sha256 == first.sha256
    assert stored(data_dir) == files
    with pytest.raises(CommandError, match="is not a valid name"):
        register("../escape", tiny_classifier(tmp_path / "c.onnx"), "--classes", "private,public")
    assert ClassifierModel.objects.count() == 1


# --- running ----------------------------------------------------------------------------------

@pytest.fixture
def tiny(data_dir, tmp_path):
    register("tiny-s2p", tiny_classifier(tmp_path / "tiny.onnx"), "--classes", "private,public")
    return ClassifierModel.objects.get(name="tiny-s2p")


@pytest.fixture
def coloured(make_image):
    # P(private) is compared within 1e-4: onnxruntime pools 448 x 448 pixels in float32
    return [make_image(f"2017_26{i:06d}", color=c) for i, c in enumerate(COLORS)]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # --here works the lanes on threads of their own
def test_launch_run_here_stores_p_private_per_image_as_computed_by_hand(tiny, coloured):
    out = StringIO()
    call_command("launch_run", "--kind", "binary", "--provider", "onnx", "--model", "tiny-s2p", "--here", "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["status"] == "finished" and summary["results"] == len(COLORS) and summary["errors"] == 0
    assert summary["cost_usd"] == 0.0 and summary["kind"] == "binary" and summary["tokens_in"] == 0
    run = Run.objects.get(pk=summary["id"])
    assert run.request_params["sha256"] == tiny.sha256 and run.request_params["classes"] == ["private", "public"]
    scores = dict(RunResult.objects.filter(run=run).values_list("image_id", "score"))
    for image in coloured:
        assert scores[image.pk] == pytest.approx(expected_p_private(image_bytes(image)), abs=1e-4)
    assert len(set(round(s, 4) for s in scores.values())) > 3  # the colours give different answers


def test_logits_are_softmaxed_and_the_class_order_is_honoured(data_dir, tmp_path, coloured, admin_user):
    source = tiny_classifier(tmp_path / "logits.onnx", softmax=False)
    register("reversed", source, "--classes", "public,private", "--output", "logits")
    run = launching.launch_run(admin_user, launching.LaunchSpec("binary", "onnx", "reversed", "", False, "binary-v1", Selection(), 4), send=False)
    run_chunk(run.pk, run.image_ids)
    scores = dict(RunResult.objects.filter(run=run).values_list("image_id", "score"))
    for image in coloured:  # column 1 is "private" now
        assert scores[image.pk] == pytest.approx(expected_p_private(image_bytes(image), private_column=1), abs=1e-4)


def test_each_image_is_answered_once_across_chunks_cancel_and_resume(tiny, coloured, admin_user):
    from inference.runs import cancel_run

    run = launching.launch_run(admin_user, launching.LaunchSpec("binary", "onnx", "tiny-s2p", "", False, "binary-v1", Selection(), 2), send=False)
    ids = sorted(run.image_ids)
    first = run_chunk(run.pk, ids[:2])
    assert first["written"] == 2
    again = run_chunk(run.pk, ids)  # a redelivered or resumed chunk: only the images without a result
    assert again["written"] == len(ids) - 2 and again["todo"] == len(ids) - 2
    assert run_chunk(run.pk, ids) == {"run": run.pk, "skipped": Run.STATUS_FINISHED}
    assert sorted(RunResult.objects.filter(run=run).values_list("image_id", flat=True)) == ids
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.done == len(ids)

    other = launching.launch_run(admin_user, launching.LaunchSpec("binary", "onnx", "tiny-s2p", "", False, "binary-v1", Selection(), 2), send=False)
    assert cancel_run(admin_user, other)
    assert run_chunk(other.pk, other.image_ids)["skipped"] in (Run.STATUS_CANCELLED, Run.STATUS_CANCELLING)
    assert not RunResult.objects.filter(run=other).exists()


def test_an_undecodable_image_fails_alone_and_a_changed_model_file_fails_the_run(tiny, coloured, admin_user):
    from django.core.files.base import ContentFile

    broken = coloured[0]  # its file name now points at bytes that are no image (stored files are shared by content)
    broken.file.name = broken.file.storage.save(f"test-broken/{broken.vispr_id}.png", ContentFile(b"not an image at all"))
    broken.save(update_fields=["file"])
    run = launching.launch_run(admin_user, launching.LaunchSpec("binary", "onnx", "tiny-s2p", "", False, "binary-v1", Selection(), 2), send=False)
    run_chunk(run.pk, run.image_ids)
    errors = dict(RunResult.objects.filter(run=run, outcome="error").values_list("image_id", "error"))
    assert list(errors) == [broken.pk] and "could not be decoded" in errors[broken.pk]
    assert RunResult.objects.filter(run=run, outcome="ok").count() == len(COLORS) - 1

    with open(tiny.path, "ab") as fh:  # the registered file changed on disk
        fh.write(b"\0")
    from inference.providers.onnx import provider as onnx_provider
    onnx_provider._verified.clear()
    again = launching.launch_run(admin_user, launching.LaunchSpec("binary", "onnx", "tiny-s2p", "", False, "binary-v1", Selection(), 2), send=False)
    run_chunk(again.pk, again.image_ids)
    again.refresh_from_db()
    assert again.status == Run.STATUS_FAILED and "changed since it was registered" in again.error
    assert not RunResult.objects.filter(run=again).exists()


def test_concurrent_requests_share_model_calls():
    seen = []

    def run_batch(rows):
        seen.append(len(rows))
        time.sleep(0.05)
        return rows[:, :2] * 2

    batcher = Batcher(run_batch, max_batch=8, gather_s=0.05)
    start = threading.Barrier(8)
    results = {}

    def call(k):
        start.wait()
        results[k] = batcher.infer(np.array([k, k + 0.5, 0.0]))

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(seen) == 8 and max(seen) > 1 and len(seen) < 8
    for k in range(8):
        assert results[k][0].tolist() == [2 * k, 2 * k + 1]


def test_a_fixed_batch_model_gets_padded_batches():
    seen = []
    batcher = Batcher(lambda rows: seen.append(rows.shape[0]) or rows, max_batch=4, fixed=True)
    out, size = batcher.infer(np.ones(3))
    assert seen == [4] and size == 1 and out.tolist() == [1, 1, 1]


# --- refusals at launch -------------------------------------------------------------------------

LAUNCH_REFUSALS = [
    ({"task": "judge", "provider": "onnx", "model_name": "tiny-s2p", "strategy": "zero_shot"}, "provider", "runs only binary runs"),
    ({"task": "binary", "provider": "openai", "model_name": "gpt-5.1"}, "provider", "choose the onnx provider"),
    ({"task": "binary", "provider": "onnx", "model_name": "nope"}, "model_name", "No local classifier named 'nope'"),
    ({"task": "binary", "provider": "onnx", "model_name": "tiny-s2p", "mode": "batch"}, "mode", "online only"),
    ({"task": "binary", "provider": "onnx", "model_name": "tiny-s2p", "strategy": "zero_shot"}, "strategy", "take no strategy"),
]


@pytest.mark.parametrize("body,field,message", LAUNCH_REFUSALS, ids=[f"{b['task']}-{f}" for b, f, _ in LAUNCH_REFUSALS])
def test_launches_the_classifier_cannot_serve_are_refused_with_the_field_named(tiny, coloured, admin_user, client_as, settings,
                                                                               body, field, message):
    settings.OPENAI_API_KEY = "sk-test"
    response = client_as(admin_user).post("/api/runs/", {**body, "concurrency": 2}, content_type="application/json")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json().get(field, [])), response.json()
    assert not Run.objects.exists()


def test_the_classifiers_page_lists_registered_models(tiny, admin_user, client_as):
    page = client_as(admin_user).get("/benchmarks/local-classifiers/classifiers/")
    text = page.content.decode()
    assert page.status_code == 200 and "tiny-s2p" in text and tiny.sha256[:12] in text and "private, public" in text
