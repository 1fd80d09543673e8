"""Batch runs against the fake OpenAI and Gemini servers, through the real SDKs: the same results as
online, two-stage annotation, partial failures and their retry, cancel, restart, redelivery."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotations.models import Label
from inference import dispatching, execution, launching, prompts, runs
from inference import lifecycle as run_lifecycle
from inference.batch import control, lifecycle
from inference.batch.models import BatchRequest, ProviderBatch
from inference.models import Run, RunResult
from inference.selection import Selection
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.batch_steps import drive, no_dispatch  # noqa: F401 - no_dispatch is a fixture


def spec(task="judge", provider="openai", mode="batch", model="gpt-5.1"):
    return launching.LaunchSpec(
        task=task, provider=provider, model_name=model, strategy="zero_shot" if task == "judge" else "",
        counterfactual_faces=False, prompt_version=prompts.DEFAULT_VERSION[task], selection=Selection(), concurrency=4, mode=mode,
    )


def results(run):
    return {r.image_id: (r.outcome, r.score, r.reasoning, r.error, r.tokens_in, r.tokens_out) for r in run.results.all()}


def labels(run):
    found = Label.objects.filter(annotator=run.annotator).select_related("attribute")
    return {(label.image_id, label.attribute.key): (label.value, label.rationale) for label in found}


@pytest.mark.parametrize("task", ["judge", "annotate"])
def test_openai_batch_run_matches_the_online_run(openai_server, images, admin_user, no_dispatch, task):
    online = launching.launch_run(admin_user, spec(task, mode="online"))
    execution.run_chunk(online.pk, online.image_ids)
    online.refresh_from_db()
    online_results, online_labels = results(online), labels(online) if task == "annotate" else {}
    if task == "annotate":
        Label.objects.all().delete()  # the batch run's annotator is the same model annotator

    run = drive(launching.launch_run(admin_user, spec(task)))
    assert run.status == Run.STATUS_FINISHED, run.error
    assert results(run) == online_results and len(online_results) == 5
    if task == "annotate":
        assert labels(run) == online_labels and len(online_labels) == 5 * 22
        assert set(ProviderBatch.objects.filter(run=run).values_list("stage", flat=True)) == {"stage1", "stage2"}
    # Through the Files and Batches endpoints, not one chat request.
    paths = [p for _, p in openai_server.batch_calls]
    assert "/v1/files" in paths and "/v1/batches" in paths
    assert run.estimated_cost_usd * 2 == pytest.approx(online.estimated_cost_usd, abs=Decimal("0.0002"))


@pytest.mark.parametrize("how", ["online", "batch"])
def test_failed_and_expired_requests_are_retried_as_the_admin_chooses(openai_server, images, admin_user, no_dispatch,
                                                                      django_capture_on_commit_callbacks, eager_celery, monkeypatch, how):
    run = launching.launch_run(admin_user, spec())
    ids = run.image_ids
    openai_server.batch_outcomes = {f"run{run.pk}-item{ids[0]}-judge": "fail", f"run{run.pk}-item{ids[1]}-judge": "expire"}
    run = drive(run)
    assert run.status == Run.STATUS_RUNNING and "2 batch requests failed or expired" in run.error
    assert set(results(run)) == set(ids[2:])
    failed = dict(BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).values_list("image_id", "error"))
    assert set(failed) == {ids[0], ids[1]} and "500" in failed[ids[0]] and "batch_expired" in failed[ids[1]]
    assert control.can_retry(run)

    openai_server.batch_outcomes = {}
    if how == "online":
        monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids: execution.run_chunk(run_id, image_ids))
    with django_capture_on_commit_callbacks(execute=True):
        assert control.retry(admin_user, run, how) == 2
    with pytest.raises(ValueError):
        control.retry(admin_user, run, how)  # nothing left to retry: changes nothing
    run = drive(run)
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 5} and run.error == ""
    assert RunResult.objects.filter(run=run).count() == 5
    if how == "batch":
        assert ProviderBatch.objects.filter(run=run, round=1).count() == 1
        assert set(BatchRequest.objects.filter(run=run, attempts=2).values_list("image_id", flat=True)) == {ids[0], ids[1]}
    else:
        assert ProviderBatch.objects.filter(run=run).count() == 1
        assert set(BatchRequest.objects.filter(run=run, state=BatchRequest.ONLINE).values_list("image_id", flat=True)) == {ids[0], ids[1]}


def test_cancel_mid_batch_keeps_what_came_back_and_loses_nothing(openai_server, images, admin_user, no_dispatch):
    openai_server.batch_polls = 100  # never completes on its own
    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)
    batch = ProviderBatch.objects.get(run=run)
    assert batch.phase == ProviderBatch.ACTIVE and batch.provider_state == "in_progress"
    assert runs.cancel_run(admin_user, run) is True
    assert ("POST", f"/v1/batches/{batch.provider_batch_id}/cancel") in openai_server.batch_calls
    run = drive(run)
    assert run.status == Run.STATUS_CANCELLED
    stored = set(results(run))
    done = set(BatchRequest.objects.filter(run=run, state=BatchRequest.DONE).values_list("image_id", flat=True))
    assert stored == done and len(stored) == 2  # the half that ran before the cancel, each once
    assert BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).count() == 3
    assert ProviderBatch.objects.get(pk=batch.pk).provider_state == "cancelled"


def test_restart_during_ingest_and_a_second_poll_store_nothing_twice(openai_server, images, admin_user, no_dispatch, monkeypatch):
    from inference.batch import ingest as ingest_module

    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)
    real_store = ingest_module._store
    calls = {"n": 0}

    def crash_after_first_group(*args, **kwargs):
        calls["n"] += 1
        real_store(*args, **kwargs)
        raise SystemExit("worker killed mid-ingest")

    monkeypatch.setattr(ingest_module, "GROUP", 2)
    monkeypatch.setattr(ingest_module, "_store", crash_after_first_group)
    with pytest.raises(SystemExit):
        lifecycle.step(run.pk)  # completes at the provider, ingest starts, the worker dies after 2 lines
    assert RunResult.objects.filter(run=run).count() == 2
    batch = ProviderBatch.objects.get(run=run)
    assert batch.ingest_owner and batch.ingest_expires_at is not None and batch.ingested_at is None
    monkeypatch.setattr(ingest_module, "_store", real_store)

    lifecycle.step(run.pk)  # the claim is held (not stale yet): a second poller ingests nothing
    assert RunResult.objects.filter(run=run).count() == 2
    ProviderBatch.objects.filter(pk=batch.pk).update(ingest_expires_at=batch.ingest_expires_at - timedelta(hours=1))
    run = drive(run)  # the stale claim is taken over: the rest is stored, the first two are skipped
    assert run.status == Run.STATUS_FINISHED and RunResult.objects.filter(run=run).count() == 5
    report = ProviderBatch.objects.get(pk=batch.pk).ingest_report
    assert report["stored"] == 3 and report["already"] == 2

    # A redelivered ingest of the same output (forced past the claim) stores nothing either.
    status = lifecycle.client_for("openai", "gpt-5.1").retrieve(batch.provider_batch_id)
    ProviderBatch.objects.filter(pk=batch.pk).update(ingested_at=None, ingest_owner="", ingest_expires_at=None)
    again = lifecycle.ingest(ProviderBatch.objects.get(pk=batch.pk), lifecycle.client_for("openai", "gpt-5.1"), status)
    assert again["stored"] == 0 and again["already"] == 5 and RunResult.objects.filter(run=run).count() == 5


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_pollers_racing_claim_the_ingest_once(openai_server, images, admin_user, no_dispatch):
    import threading

    from django.db import connection

    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)  # submitted; the fake completes it at the next retrieve
    batch = ProviderBatch.objects.get(run=run)
    client = lifecycle.client_for("openai", "gpt-5.1")
    status = client.retrieve(batch.provider_batch_id)
    assert status.terminal
    barrier, reports = threading.Barrier(2), []

    def poller():
        try:
            barrier.wait()
            reports.append(lifecycle.ingest(ProviderBatch.objects.get(pk=batch.pk), client, status))
        finally:
            connection.close()

    threads = [threading.Thread(target=poller) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r is None for r in reports) == [False, True]  # one claimed it, the other stepped back
    assert [r for r in reports if r][0]["stored"] == 5
    assert RunResult.objects.filter(run=run).count() == 5


MALFORMED = {
    "truncated": lambda data: data[: data.rindex(b"\n", 0, len(data) - 1) + 40],
    "unknown": lambda data: data + b'{"id": "x", "custom_id": "run999-img1-judge", "response": {"status_code": 200, "body": {}}, "error": null}\n',
    "duplicate": lambda data: data + data.splitlines(keepends=True)[0],
    "garbage": lambda data: b"this is not json\n" + data,
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_output_lines_are_refused_one_by_one(openai_server, images, admin_user, no_dispatch, kind):
    openai_server.mangle_output = MALFORMED[kind]
    run = drive(launching.launch_run(admin_user, spec()))
    report = ProviderBatch.objects.get(run=run).ingest_report
    assert report["refused_count"] == 1, report
    reason = report["refused"][0]["reason"]
    expected = {"truncated": "not valid JSON", "unknown": "unknown custom_id", "duplicate": "duplicate custom_id",
                "garbage": "not valid JSON"}[kind]
    assert expected in reason and report["refused"][0]["line"] >= 1
    stored = RunResult.objects.filter(run=run).count()
    if kind == "truncated":
        # The cut line's request has no result: it is failed (retryable), nothing else changed.
        assert stored == 4 and BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).count() == 1
    else:
        assert stored == 5 and run.status == Run.STATUS_FINISHED
    assert not RunResult.objects.exclude(run=run).exists()


def test_requests_are_split_by_the_per_file_limits(openai_server, images, admin_user, no_dispatch, settings):
    settings.CPRT_BATCH_MAX_REQUESTS = 2
    run = drive(launching.launch_run(admin_user, spec()))
    parts = list(ProviderBatch.objects.filter(run=run).values_list("part", "request_count"))
    assert parts == [(0, 2), (1, 2), (2, 1)]
    assert run.status == Run.STATUS_FINISHED and RunResult.objects.filter(run=run).count() == 5
    settings.CPRT_BATCH_MAX_REQUESTS = 50_000
    settings.CPRT_BATCH_MAX_BYTES = 2_500  # two requests (about 1.2 kB each) per file
    run2 = drive(launching.launch_run(admin_user, spec()))
    sizes = list(ProviderBatch.objects.filter(run=run2).values_list("input_bytes", flat=True))
    assert len(sizes) >= 2 and max(sizes) <= 2_500 and sum(ProviderBatch.objects.filter(run=run2).values_list("request_count", flat=True)) == 5


def test_a_batch_pending_past_the_window_says_so(openai_server, images, admin_user, no_dispatch):
    openai_server.batch_polls = 100
    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)
    ProviderBatch.objects.filter(run=run).update(expires_at=timezone.now() - timedelta(minutes=5))
    lifecycle.step(run.pk)
    run.refresh_from_db()
    assert run.is_active and "still pending after the provider's 24 h window" in run.error


def test_reconcile_leaves_batch_runs_to_their_poller(openai_server, images, admin_user, no_dispatch, settings, monkeypatch):
    openai_server.batch_polls = 100
    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda *a, **k: sent.append(a))
    assert run_lifecycle.reconcile()["redispatched"] == [] and sent == []
    run.refresh_from_db()
    assert runs.can_resume(run) is False  # its requests are at the provider


@pytest.mark.parametrize("task", ["judge", "annotate"])
def test_gemini_inline_batch_matches_the_online_run(gemini_server, images, admin_user, no_dispatch, task):
    online = launching.launch_run(admin_user, spec(task, provider="gemini", mode="online", model="gemini-2.5-flash"))
    execution.run_chunk(online.pk, online.image_ids)
    online_results = results(online)
    run = drive(launching.launch_run(admin_user, spec(task, provider="gemini", model="gemini-2.5-flash")))
    assert run.status == Run.STATUS_FINISHED, run.error
    assert results(run) == online_results and len(online_results) == 5
    batch = ProviderBatch.objects.filter(run=run).first()
    assert batch.provider_batch_id.startswith("batches/") and batch.provider_state == "JOB_STATE_SUCCEEDED"


def test_gemini_large_batch_goes_as_an_uploaded_file_with_partial_failures(gemini_server, images, admin_user, no_dispatch, settings):
    settings.CPRT_BATCH_GEMINI_INLINE_MAX_BYTES = 0  # every batch is "large"
    run = launching.launch_run(admin_user, spec(provider="gemini", model="gemini-2.5-flash"))
    gemini_server.batch_outcomes = {f"run{run.pk}-item{run.image_ids[0]}-judge": "fail"}
    run = drive(run)
    calls = [p for _, p in gemini_server.batch_calls]
    assert any(p.startswith("/upload/") for p in calls) and any(p.endswith(":download") for p in calls)
    assert set(results(run)) == set(run.image_ids[1:])
    assert BatchRequest.objects.get(run=run, image_id=run.image_ids[0]).state == BatchRequest.FAILED
    assert "1 batch requests failed" in run.error


def test_a_redelivered_submission_sends_nothing_twice(openai_server, images, admin_user, no_dispatch):
    openai_server.batch_polls = 100
    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)
    assert lifecycle.submit(run, "judge", run.image_ids) == []  # the same requests again: refused by the ledger
    batch = ProviderBatch.objects.get(run=run)
    assert lifecycle.send(batch, lifecycle.client_for("openai", "gpt-5.1"), "/nonexistent") is False  # already claimed
    assert [p for m, p in openai_server.batch_calls if m == "POST" and p == "/v1/batches"] == ["/v1/batches"]
    assert BatchRequest.objects.filter(run=run).count() == 5


def test_a_request_too_big_for_any_file_fails_the_run_with_a_reason(openai_server, images, admin_user, no_dispatch, settings):
    settings.CPRT_BATCH_MAX_BYTES = 1024
    run = drive(launching.launch_run(admin_user, spec()))
    assert run.status == Run.STATUS_FAILED and "over the per-file limit" in run.error
    assert not ProviderBatch.objects.filter(run=run).exists() and not [p for _, p in openai_server.batch_calls if "/batches" in p]


def test_batch_errors_are_stored_without_the_key(openai_server, images, admin_user, no_dispatch, settings):
    """A provider error that echoes the key (a failed poll, a failed submission) is stored scrubbed,
    on the batch and on each of its requests, like a run's error."""
    openai_server.batch_polls = 100
    run = launching.launch_run(admin_user, spec())
    lifecycle.step(run.pk)
    batch = ProviderBatch.objects.get(run=run)
    key = settings.OPENAI_API_KEY

    class EchoingClient:
        def retrieve(self, batch_id):
            raise RuntimeError(f"proxy said: Authorization: Bearer {key} refused")

    lifecycle.poll(batch, EchoingClient())
    batch.refresh_from_db()
    assert batch.error.startswith("poll failed: proxy said") and key not in batch.error
    control.end_unsent(batch, f"submission failed: bad key {key}")
    assert key not in ProviderBatch.objects.get(pk=batch.pk).error
    errors = list(BatchRequest.objects.filter(batch=batch).values_list("error", flat=True))
    assert len(errors) == 5 and all(e.startswith("submission failed: bad key") and key not in e for e in errors)
