"""Run services: launch, chunks, idempotency, annotate labels, cancel, resume, reconcile, selection, limiter."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotations import taxonomy
from annotations.models import Annotator, Label, Labeling
from core.models import AuditEvent
from inference import dispatching, execution, kinds, launching, lifecycle, pricing, prompts, runs
from inference.models import Run, RunResult
from inference.ratelimit import RateLimiter
from inference.selection import Selection, select_image_ids
from inference.tasks import run_chunk
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.server import TO_LABEL, stage1_answers


def spec(task="judge", provider="openai", strategy="zero_shot", concurrency=4, selection=None, cf=False):
    return launching.LaunchSpec(
        task=task, provider=provider, model_name="gpt-5.1", strategy=strategy if task == "judge" else "",
        counterfactual_faces=cf, prompt_version=prompts.DEFAULT_VERSION[task], selection=selection or Selection(), concurrency=concurrency,
    )


def test_launch_stores_exact_prompt_and_dispatches_on_commit(openai_server, images, admin_user, django_capture_on_commit_callbacks, eager_celery):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run = launching.launch_run(admin_user, spec(strategy="taxonomy", cf=True))
    # Three on-commit callbacks: the launch's dispatch, then (the judge run having finished) the
    # judge_run_finished signal, whose receiver sends the metrics precompute by name on commit, so
    # that no page pays for the bootstrap.
    assert len(callbacks) == 3
    run.refresh_from_db()
    from scoring.models import ComputedMetrics

    assert ComputedMetrics.objects.filter(key__startswith=f"run-metrics:{run.pk}:").exists()
    assert run.prompt_text == kinds.render("judge", "judge-v2", "taxonomy", True)
    assert run.image_ids == sorted(i.pk for i in images) and run.total_images == 5
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 5}
    assert run.estimate["requests"] == 5 and run.estimate["cost_usd"] > 0
    assert run.estimated_cost_usd > 0 and run.tokens_in == 5 * 1200
    event = AuditEvent.objects.get(action="run.launch")
    assert event.actor == admin_user and event.target_id == str(run.pk) and event.data["images"] == 5
    # Every request carried the stored prompt, verbatim.
    for request in openai_server.requests:
        assert request["json"]["messages"][1]["content"][0]["text"] == run.prompt_text["judge"]["user"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_duplicated_chunk_neither_loses_nor_doubles(openai_server, images, monkeypatch):
    monkeypatch.setattr(dispatching, "dispatch", lambda *args, **kwargs: 0)  # this test runs the chunks itself
    run = launching.launch_run(None, spec())
    first = execution.run_chunk(run.pk, run.image_ids[:3])
    assert first["written"] == 3
    # Two copies of the full chunk at once (a redelivered message racing the original).
    Run.objects.filter(pk=run.pk).update(status=Run.STATUS_RUNNING)
    outputs = []

    def copy():
        try:
            outputs.append(execution.run_chunk(run.pk, run.image_ids))
        finally:
            connection.close()

    threads = [threading.Thread(target=copy) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert RunResult.objects.filter(run=run).count() == 5
    assert sorted(RunResult.objects.filter(run=run).values_list("image_id", flat=True)) == run.image_ids
    # A copy that starts after the other has finished the run finds it finished and does nothing (a slow CI machine).
    assert all("written" in o or o.get("skipped") == Run.STATUS_FINISHED for o in outputs), outputs
    assert sum(o.get("written", 0) for o in outputs) == 2
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED


def test_chunk_ignores_images_outside_the_run(openai_server, images, make_image, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec(selection=Selection(sample_size=2, seed=1)))
    execution.run_chunk(run.pk, [i.pk for i in images])
    assert sorted(run.results.values_list("image_id", flat=True)) == run.image_ids


def test_annotate_run_writes_model_labels_and_both_stages(openai_server, images, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec(task="annotate"))
    assert run.annotator == Annotator.for_model("openai", "gpt-5.1", "annotate-v2")
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 5}
    keys = taxonomy.active().keys
    for image in images:
        with image.file.open("rb") as fh:
            expected = stage1_answers(fh.read(), keys, prompts.STAGE1_CHOICES["annotate-v2"])["answers"]
        found = Label.objects.filter(image=image, annotator=run.annotator).select_related("attribute")
        labels = {label.attribute.key: label for label in found}
        assert set(labels) == set(keys)
        assert all(a["inferable"] in ("yes", "no") for a in expected.values())  # annotate-v2: a binary stage 1
        for key, label in labels.items():
            partial = "partly visible" in expected[key]["reasoning"]  # stage 2 reads the strength from the reasoning
            assert label.value == (0.5 if partial else TO_LABEL[expected[key]["inferable"]])
            assert label.rationale == expected[key]["reasoning"]
        result = run.results.get(image=image)
        assert set(result.raw) >= {"stage1", "stage2"}
        assert Labeling.objects.get(image=image, annotator=run.annotator).status == "submitted"
    assert len(openai_server.requests) == 10  # two stages per image


def test_annotate_stage2_nonsense_is_unparseable_and_writes_no_labels(openai_server, make_image, django_capture_on_commit_callbacks):
    make_image("2017_00000001")
    keys = taxonomy.active().keys
    from tests.fakes import openai_server as ofake

    openai_server.queue(ofake.ok(stage1_answers(b"x", keys, ("yes", "no"))), ofake.ok({"labels": {k: 0.7 for k in keys}}))
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec(task="annotate"))
    execution.run_chunk(run.pk, run.image_ids)
    result = run.results.get()
    assert result.outcome == "unparseable" and "stage 2" in result.error and "0.7" in result.error
    assert set(result.raw) >= {"stage1", "stage2"}
    assert not Label.objects.filter(annotator=run.annotator).exists()


def test_annotate_v2_stage1_refuses_uncertain_and_v1_still_accepts_it(openai_server, make_image, django_capture_on_commit_callbacks):
    """The paper's stage 1 is a binary decision: an "uncertain" answer is not valid under annotate-v2."""
    make_image("2017_00000002")
    keys = taxonomy.active().keys
    from tests.fakes import openai_server as ofake

    answers = {"answers": {k: {"inferable": "uncertain", "reasoning": "partly"} for k in keys}}
    openai_server.queue(ofake.ok(answers))
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec(task="annotate"))
    execution.run_chunk(run.pk, run.image_ids)
    result = run.results.get()
    assert result.outcome == "unparseable" and "yes, no" in result.error
    assert not Label.objects.filter(annotator=run.annotator).exists()
    schema = kinds.render("annotate", "annotate-v1")["schemas"]["stage1"]
    assert "uncertain" in next(iter(schema["properties"]["answers"]["properties"].values()))["properties"]["inferable"]["enum"]


def test_annotate_stage1_missing_keys_is_unparseable(openai_server, make_image, django_capture_on_commit_callbacks):
    make_image("2017_00000001")
    from tests.fakes import openai_server as ofake

    answers = stage1_answers(b"x", taxonomy.active().keys[:-1], ("yes", "no"))
    openai_server.queue(ofake.ok(answers))
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec(task="annotate"))
    execution.run_chunk(run.pk, run.image_ids)
    result = run.results.get()
    assert result.outcome == "unparseable" and "missing ['background_people']" in result.error
    assert len(openai_server.requests) == 1  # no stage 2 after a bad stage 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_cancel_stops_within_seconds_and_resume_completes(openai_server, make_image, admin_user, settings, monkeypatch, eager_celery):
    for i in range(40):
        make_image(f"2017_{i:08d}", color=(i, 2 * i, 3 * i))
    openai_server.delay = 0.3
    real_dispatch = dispatching.dispatch
    monkeypatch.setattr(dispatching, "dispatch", lambda *args, **kwargs: 0)  # this test runs the chunk itself
    run = launching.launch_run(admin_user, spec(concurrency=2))
    monkeypatch.setattr(dispatching, "dispatch", real_dispatch)
    def chunk():
        try:
            execution.run_chunk(run.pk, run.image_ids)
        finally:
            connection.close()

    worker = threading.Thread(target=chunk)
    worker.start()
    time.sleep(1.0)
    run.refresh_from_db()
    assert runs.cancel_run(admin_user, run), (run.status, run.error, run.results.count())
    cancelled_at = time.monotonic()
    worker.join(timeout=15)
    assert not worker.is_alive()
    assert time.monotonic() - cancelled_at < 3.0, "a cancel must stop the chunk within seconds"
    run.refresh_from_db()
    assert run.status == Run.STATUS_CANCELLED
    done = run.results.count()
    assert 0 < done < 40
    requests_at_cancel = openai_server.count
    time.sleep(0.8)
    assert openai_server.count == requests_at_cancel, "no request may start after the chunk stopped"
    assert runs.can_resume(run)
    openai_server.delay = 0.0
    assert runs.resume_run(admin_user, run) == 40 - done  # dispatched on commit, run eagerly
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED
    assert run.results.count() == 40
    assert AuditEvent.objects.filter(action__in=["run.cancel", "run.resume"]).count() == 2


def test_cancel_of_a_queued_run_without_workers_is_immediate(openai_server, images, admin_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(admin_user, spec())
    runs.cancel_run(admin_user, run)
    run.refresh_from_db()
    assert run.status == Run.STATUS_CANCELLED
    assert execution.run_chunk(run.pk, run.image_ids) == {"run": run.pk, "skipped": "cancelled"}
    assert openai_server.count == 0


def test_reconciler_redispatches_stale_runs_only(openai_server, images, settings, django_capture_on_commit_callbacks, eager_celery):
    settings.CPRT_RUN_STALE_S = 60
    with django_capture_on_commit_callbacks(execute=False):
        stale = launching.launch_run(None, spec())
        fresh = launching.launch_run(None, spec())
    execution.run_chunk(stale.pk, stale.image_ids[:2])  # then "the worker died"
    long_ago = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=stale.pk).update(status=Run.STATUS_RUNNING, heartbeat_at=long_ago, dispatched_at=long_ago, created_at=long_ago)
    Run.objects.filter(pk=fresh.pk).update(dispatched_at=timezone.now())
    report = lifecycle.reconcile()
    assert report["redispatched"] == [stale.pk]
    stale.refresh_from_db()
    assert stale.status == Run.STATUS_FINISHED and stale.results.count() == 5
    fresh.refresh_from_db()
    assert fresh.status == Run.STATUS_QUEUED and fresh.results.count() == 0


def test_reconciler_closes_complete_runs_and_abandoned_cancels(openai_server, images, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        done = launching.launch_run(None, spec())
        cancelling = launching.launch_run(None, spec())
    execution.run_chunk(done.pk, done.image_ids)
    long_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=done.pk).update(status=Run.STATUS_RUNNING, finished_at=None, heartbeat_at=long_ago, dispatched_at=long_ago,
                                          created_at=long_ago)
    Run.objects.filter(pk=cancelling.pk).update(status=Run.STATUS_CANCELLING, heartbeat_at=long_ago, dispatched_at=long_ago, created_at=long_ago)
    report = lifecycle.reconcile()
    assert report["finished"] == [done.pk] and report["cancelled"] == [cancelling.pk]


@pytest.mark.parametrize(
    "args,message",
    [
        ((0, [1]), "run_id"),
        (("1", [1]), "run_id"),
        ((1, []), "item_ids"),
        ((1, [1, -2]), "item_ids"),
        ((1, ["3"]), "item_ids"),
        ((1, "1,2"), "item_ids"),
        ((1, list(range(1, 10_002))), "item_ids"),
    ],
)
def test_chunk_task_refuses_bad_input_and_changes_nothing(images, args, message):
    before = (Run.objects.count(), RunResult.objects.count())
    with pytest.raises(ValueError, match=message):
        run_chunk.run(*args)
    assert (Run.objects.count(), RunResult.objects.count()) == before


def test_chunk_for_a_missing_run_is_a_no_op(db):
    assert execution.run_chunk(999, [1]) == {"run": 999, "skipped": "no such run"}
    assert run_chunk.run(999, [4]) == {"run": 999, "skipped": "no such run"}  # valid arguments, no such run


def test_selection_by_split_consensus_and_seeded_sample(make_image):
    from scoring.models import ImageScore, ScoringProfile

    test = [make_image(f"2017_{i:08d}", split="test") for i in range(10)]
    train = [make_image(f"2016_{i:08d}", split="train") for i in range(3)]
    make_image("2017_nofile", with_file=False)
    profile = ScoringProfile.active()
    for n, image in enumerate(test):
        bio = 1 if n % 2 == 0 else 0
        ImageScore.objects.create(image=image, profile=profile, binary_labels={"biometrics": bio, "age": 1}, n1=bio, n2=0, n3=1, n4=0,
                                  level=1 if bio else 3, score=0.9 if bio else 0.3)
    ids, described = select_image_ids(Selection(split="all"))
    assert len(ids) == 13  # the image without bytes is never selected
    assert select_image_ids(Selection(split="train"))[0] == sorted(i.pk for i in train)
    bio, described = select_image_ids(Selection(split="test", attribute="biometrics", attribute_value=1))
    assert bio == sorted(i.pk for n, i in enumerate(test) if n % 2 == 0)
    assert described["profile"] == profile.label
    assert select_image_ids(Selection(attribute="biometrics", attribute_value=0))[0] == sorted(i.pk for n, i in enumerate(test) if n % 2)
    assert select_image_ids(Selection(level=3))[0] == sorted(i.pk for n, i in enumerate(test) if n % 2)
    a = select_image_ids(Selection(sample_size=4, seed=7))[0]
    assert a == select_image_ids(Selection(sample_size=4, seed=7))[0] and len(a) == 4
    assert a != select_image_ids(Selection(sample_size=4, seed=8))[0]


def test_selection_from_a_previous_judge_run(openai_server, images, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec())
    execution.run_chunk(run.pk, run.image_ids)
    scores = dict(run.results.values_list("image_id", "score"))
    threshold = sorted(scores.values())[2]
    ids, _ = select_image_ids(Selection(from_run=run.pk, min_score=threshold))
    assert ids == sorted(i for i, s in scores.items() if s >= threshold)


def test_rate_limiter_spaces_requests_and_honours_holds(settings, tmp_path):
    settings.CPRT_RATE_LIMIT_URL = ""
    limiter = RateLimiter("test-provider-" + str(time.time_ns()), rpm=1200)  # 20/s, bursts of 20
    started = time.monotonic()
    for _ in range(50):
        limiter.acquire()
    elapsed = time.monotonic() - started
    assert 1.3 < elapsed < 3.0  # 20 at once, then 30 more at 20/s
    limiter.hold(1.0)
    started = time.monotonic()
    limiter.acquire()
    assert time.monotonic() - started >= 0.9
    stop = threading.Event()
    stop.set()
    assert RateLimiter("unlimited", rpm=0).acquire(stop) is False


def test_prompts_never_reveal_the_scoring_function():
    tax = taxonomy.from_file()
    for strategy in prompts.STRATEGIES:
        for cf in (False, True):
            text = "\n".join(prompts.judge_prompt("judge-v2", strategy, cf, tax).values())
            assert "weighs more than any amount" not in text and "more kinds of information mean more risk" not in text
            for secret in ("330", "1319", "0.75", "0.5", "sqrt", "boundar", "weight"):
                assert secret not in text, (strategy, cf, secret)
            assert ("perfectly anonymized" in text) == cf
            assert ("biometrics" in text) == (strategy == "taxonomy")
            assert ("Compositional risk" in text) == (strategy == "intuition")
    taxonomy_text = prompts.judge_prompt("judge-v2", "taxonomy", False, tax)["user"]
    assert all(a.key in taxonomy_text and a.question in taxonomy_text for a in tax.attributes)
    # The older version keeps its text (it stated the arithmetic), so its runs stay traceable.
    assert "weighs more than any amount" in prompts.judge_prompt("judge-v1", "taxonomy", False, tax)["user"]
    assert prompts.DEFAULT_VERSION == {"judge": "judge-v2", "annotate": "annotate-v2"}
    assert "older" in prompts.version_label("judge-v1") and "older" in prompts.version_label("annotate-v1")
    with pytest.raises(ValueError):
        prompts.judge_prompt("judge-v0", "zero_shot", False, tax)
    with pytest.raises(ValueError):
        kinds.render("annotate", "annotate-v1", "taxonomy", False, tax)


def test_prices_are_estimates_with_unknown_models_unknown():
    assert float(pricing.cost("openai", "gpt-5.1-2025-11-13", 1_000_000, 0)) == pytest.approx(pricing.PRICES["openai"]["gpt-5.1"][0])
    assert float(pricing.cost("openai", "gpt-4o-mini", 0, 1_000_000)) == pytest.approx(0.60)
    assert pricing.cost("openai", "mystery-model", 10, 10) is None
    assert pricing.cost("vllm", "Qwen/Qwen2.5-VL-7B-Instruct", 10**6, 10**6) == 0
