"""vLLM's offline batch: export the request file, ingest a run_batch-format output file (the GPU path)."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from inference import dispatching, execution, launching, prompts
from inference.batch import lifecycle
from inference.batch.models import BatchRequest, ProviderBatch
from inference.models import Run
from inference.selection import Selection
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.openai_server import FakeOpenAIServer


def spec(task, mode):
    return launching.LaunchSpec(task=task, provider="vllm", model_name="Qwen/Qwen2.5-VL-7B-Instruct", strategy="zero_shot" if task == "judge" else "",
                               counterfactual_faces=False, prompt_version=prompts.DEFAULT_VERSION[task], selection=Selection(),
                               concurrency=2, mode=mode)


def run_batch(request_path, output_path, fail=()):
    """What `python -m vllm.entrypoints.openai.run_batch` writes: one BatchRequestOutput per input line."""
    model = FakeOpenAIServer()
    with open(request_path) as src, open(output_path, "w") as out:
        for n, text in enumerate(src):
            line = json.loads(text)
            assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
            if line["custom_id"] in fail:
                response, error = {"status_code": 400, "request_id": f"vllm-batch-{n}",
                                   "body": {"object": "error", "message": "bad", "code": 400}}, None
            else:
                response, error = {"status_code": 200, "request_id": f"vllm-batch-{n}",
                                   "body": model.default_reply(line["url"], line["body"]).body}, None
            out.write(json.dumps({"id": f"vllm-{n}", "custom_id": line["custom_id"], "response": response, "error": error}) + "\n")


def results(run):
    return {r.image_id: (r.outcome, r.score, r.reasoning, r.error, r.tokens_in, r.tokens_out) for r in run.results.all()}


@pytest.mark.parametrize("task", ["judge", "annotate"])
def test_offline_vllm_batch_matches_the_online_run(vllm_server, images, admin_user, monkeypatch, tmp_path, capsys, task):
    monkeypatch.setattr(dispatching, "dispatch", lambda *a, **k: 0)
    monkeypatch.setattr(dispatching, "start_batch", lambda *a, **k: None)
    online = launching.launch_run(admin_user, spec(task, "online"))
    execution.run_chunk(online.pk, online.image_ids)
    expected = results(online)

    run = launching.launch_run(admin_user, spec(task, "batch"))
    lifecycle.step(run.pk)  # the poller does not submit an offline vLLM run
    assert not ProviderBatch.objects.filter(run=run).exists()
    assert not [p for _, p in vllm_server.batch_calls if "/batches" in p or "/files" in p]
    stages = ["judge"] if task == "judge" else ["stage1", "stage2"]
    for stage in stages:
        requests, output = tmp_path / f"{stage}.jsonl", tmp_path / f"{stage}-out.jsonl"
        call_command("batch_export", run.pk, str(requests))
        batch = ProviderBatch.objects.get(run=run, stage=stage)
        assert f"batch_ingest {batch.pk}" in capsys.readouterr().out
        run_batch(requests, output)
        call_command("batch_ingest", batch.pk, str(output))
        with pytest.raises(CommandError, match="ingested already"):
            call_command("batch_ingest", batch.pk, str(output))
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and results(run) == expected and len(expected) == 5


def test_offline_failures_are_exported_again_and_bad_paths_refused(vllm_server, images, admin_user, monkeypatch, tmp_path):
    monkeypatch.setattr(dispatching, "start_batch", lambda *a, **k: None)
    run = launching.launch_run(admin_user, spec("judge", "batch"))
    call_command("batch_export", run.pk, str(tmp_path / "in.jsonl"))
    batch = ProviderBatch.objects.get(run=run)
    with pytest.raises(CommandError, match="is not a file"):
        call_command("batch_ingest", batch.pk, str(tmp_path / "missing.jsonl"))
    run_batch(tmp_path / "in.jsonl", tmp_path / "out.jsonl", fail={f"run{run.pk}-item{run.image_ids[0]}-judge"})
    call_command("batch_ingest", batch.pk, str(tmp_path / "out.jsonl"))
    assert BatchRequest.objects.get(run=run, image_id=run.image_ids[0]).state == BatchRequest.FAILED
    call_command("batch_export", run.pk, str(tmp_path / "retry.jsonl"))  # the failed request, in a follow-up file
    retry = ProviderBatch.objects.get(run=run, round=1)
    assert retry.request_count == 1 and len((tmp_path / "retry.jsonl").read_text().splitlines()) == 1
    run_batch(tmp_path / "retry.jsonl", tmp_path / "retry-out.jsonl")
    call_command("batch_ingest", retry.pk, str(tmp_path / "retry-out.jsonl"))
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.results.count() == 5


def test_ingest_refuses_malformed_lines_one_by_one(vllm_server, images, admin_user, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(dispatching, "start_batch", lambda *a, **k: None)
    run = launching.launch_run(admin_user, spec("judge", "batch"))
    call_command("batch_export", run.pk, str(tmp_path / "in.jsonl"))
    batch = ProviderBatch.objects.get(run=run)
    run_batch(tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    good = (tmp_path / "out.jsonl").read_text().splitlines()
    bad = [good[0], good[0], '{"custom_id": "run1-img999999-judge", "response": {"status_code": 200, "body": {}}}',
           "[1, 2", *good[1:4], good[4][:50]]
    (tmp_path / "bad.jsonl").write_text("\n".join(bad) + "\n")
    call_command("batch_ingest", batch.pk, str(tmp_path / "bad.jsonl"))
    out = capsys.readouterr().out
    assert "stored 4" in out and "refused 4 lines" in out
    assert "line 2: duplicate custom_id" in out and "line 3: unknown custom_id" in out and "line 4: not valid JSON" in out
    assert "line 8: not valid JSON" in out
    assert run.results.count() == 4 and BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).count() == 1
    assert not Run.objects.exclude(pk=run.pk).exists()
