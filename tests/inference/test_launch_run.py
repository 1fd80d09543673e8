"""`manage.py launch_run`: what the launch page and the API launch, with their rules and messages;
`--here` works the run in this process (lanes claimed and leased, no broker message), `--wait`
waits for real workers, `--json` reports the run."""
from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from core.models import AuditEvent
from cprt_site.celery import app
from inference import inprocess, launching, leases, prompts
from inference.models import Run, RunLane, RunResult
from inference.selection import Selection
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.workers import celery_worker, purge_broker

JUDGE = ["--kind", "judge", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "zero_shot"]


@pytest.fixture
def broker(monkeypatch):
    """Every message sent to the broker, recorded instead of sent: (task name, args, kwargs)."""
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args=None, kwargs=None, **options: sent.append((name, args, kwargs)))
    return sent


def run_messages(sent) -> list:
    """The messages about the run's own work (a finished judge run still queues scoring's metrics refresh)."""
    return [m for m in sent if m[0].startswith("inference.")]


def launch(*args) -> tuple[dict | None, str, str]:
    """(the --json report or None, stdout, stderr) of one launch_run."""
    out, err = io.StringIO(), io.StringIO()
    call_command("launch_run", *args, stdout=out, stderr=err)
    text = out.getvalue()
    return (json.loads(text) if "--json" in args else None), text, err.getvalue()


def refusal(*args) -> str:
    with pytest.raises(CommandError) as caught:
        launch(*args)
    return str(caught.value)


def stored() -> tuple:
    return Run.objects.count(), RunLane.objects.count(), RunResult.objects.count(), AuditEvent.objects.count()


# --- --here ---------------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_here_json_works_every_lane_in_this_process_once_with_no_broker_message(openai_server, images, broker, settings):
    settings.CPRT_RUN_LANE_CONCURRENCY = 2  # --concurrency 4: two lanes, two threads
    report, _, progress = launch(*JUDGE, "--concurrency", "4", "--here", "--json")
    run = Run.objects.get()
    assert report == {
        "id": run.pk, "kind": "judge", "status": "finished", "results": 5, "errors": 0, "total": 5,
        "cost_usd": float(run.estimated_cost_usd), "outcomes": {"ok": 5}, "provider": "openai", "model": "gpt-5.1",
        "strategy": "zero_shot", "prompt_version": prompts.DEFAULT_VERSION["judge"], "mode": "online", "concurrency": 4,
        "tokens_in": run.tokens_in, "tokens_out": run.tokens_out, "error": "", "stop_reason": "", "items_resent": 0,
        "figures_url": f"/scoring/runs/{run.pk}/",
    }
    assert report["cost_usd"] > 0 and run.tokens_in > 0
    assert openai_server.count == 5  # one request per image
    assert sorted(RunResult.objects.filter(run=run).values_list("image_id", flat=True)) == sorted(i.pk for i in images)
    assert run_messages(broker) == []  # no message: not the chunks, not a hand-on
    lanes = list(RunLane.objects.filter(run=run))
    assert len(lanes) == 2 and all(lane.owner == "" and lane.lease_expires_at is None for lane in lanes)  # claimed, then released
    assert all(lane.dispatches == 0 for lane in lanes)  # never sent to the broker
    assert f"run #{run.pk} finished: 5/5 images (100%)" in progress
    assert AuditEvent.objects.filter(action="run.launch", target_id=str(run.pk)).count() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_here_annotate_writes_the_model_labels(openai_server, images, broker):
    report, _, _ = launch("--kind", "annotate", "--provider", "openai", "--model", "gpt-5.1", "--here", "--json")
    assert (report["kind"], report["status"], report["results"], report["errors"]) == ("annotate", "finished", 5, 0)
    run = Run.objects.get()
    assert run.annotator.labels.values("image_id").distinct().count() == 5
    assert openai_server.count == 10 and run_messages(broker) == []  # two stages per image


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_here_a_failed_run_prints_its_report_and_exits_non_zero(openai_server, images, broker):
    openai_server.queue(ofake.error(401, "bad key"))  # fatal: nothing in this run can succeed
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"Run #\d+ ended failed: .*401"):
        call_command("launch_run", *JUDGE, "--concurrency", "1", "--here", "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert report["status"] == "failed" and "401" in report["error"] and report["results"] == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_here_batch_mode_steps_the_batch_as_the_poller_would(openai_server, images, broker, settings):
    settings.CPRT_BATCH_POLL_S = 0.05
    report, _, _ = launch(*JUDGE, "--mode", "batch", "--here", "--json")
    assert (report["mode"], report["status"], report["results"], report["errors"]) == ("batch", "finished", 5, 0)
    assert run_messages(broker) == []


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_here_leaves_a_lane_that_a_live_worker_holds(openai_server, images, broker):
    """--here claims its lanes like any worker: a lane leased by someone alive is not worked."""
    run = launching.launch_run(None, launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False,
                                                          prompts.DEFAULT_VERSION["judge"], Selection(), 2), send=False)
    lane = leases.lanes_of(run)[0]
    RunLane.objects.filter(pk=lane.pk).update(owner="a-live-worker", lease_expires_at=timezone.now() + timedelta(seconds=60))
    with pytest.raises(inprocess.StoppedHere, match=rf"Run #{run.pk} is queued \(0/5 images\) but this process stopped working it: "
                                                      r"lane 0: held by another worker \(its lease is live\)"):
        inprocess.work(run.pk)
    assert openai_server.count == 0 and Run.objects.get(pk=run.pk).status == Run.STATUS_QUEUED
    assert RunLane.objects.get(pk=lane.pk).owner == "a-live-worker"


# --- the same launch as the form and the API --------------------------------------------------------

def test_the_command_launches_what_the_api_launches(client_as, admin_user, images, openai_server, broker):
    body = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "counterfactual_faces": True,
            "prompt_version": "judge-v1", "split": "test", "sample_size": 3, "seed": 7, "concurrency": 3}
    response = client_as(admin_user).post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    report, _, _ = launch("--kind", "judge", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "taxonomy",
                          "--counterfactual-faces", "--prompt-version", "judge-v1", "--split", "test", "--sample", "3",
                          "--seed", "7", "--concurrency", "3", "--json")
    assert report["status"] == "queued" and report["total"] == 3
    by_api, by_command = Run.objects.get(pk=response.json()["id"]), Run.objects.get(pk=report["id"])
    for field in ("task", "provider", "model_name", "strategy", "counterfactual_faces", "face_variant", "prompt_version",
                  "prompt_text", "selection", "image_ids", "concurrency", "mode", "request_params", "estimate", "total", "status"):
        assert getattr(by_api, field) == getattr(by_command, field), field


def test_defaults_are_the_forms(images, openai_server, broker):
    report, _, _ = launch(*JUDGE, "--json")
    run = Run.objects.get(pk=report["id"])
    assert (run.concurrency, run.mode, run.selection["split"], run.prompt_version) == (8, "online", "all", prompts.DEFAULT_VERSION["judge"])
    assert run.image_ids == sorted(i.pk for i in images)


ERRORS = [
    # (command options, API body, the form field the message is about)
    ([*JUDGE[:6], "--strategy", "wild"], {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "wild"}, "strategy"),
    (["--kind", "annotate", "--provider", "openai", "--model", "gpt-5.1", "--strategy", "taxonomy"],
     {"task": "annotate", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy"}, "strategy"),
    (["--kind", "bogus", "--provider", "openai", "--model", "gpt-5.1"], {"task": "bogus", "provider": "openai", "model_name": "gpt-5.1"}, "task"),
    ([*JUDGE[:2], "--provider", "nonsense", *JUDGE[4:]], {"task": "judge", "provider": "nonsense", "model_name": "gpt-5.1", "strategy": "zero_shot"},
     "provider"),
    ([*JUDGE, "--prompt-version", "annotate-v2"], {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot",
                                                   "prompt_version": "annotate-v2"}, "prompt_version"),
    ([*JUDGE[:4], "--model", "gpt 5; rm", *JUDGE[6:]], {"task": "judge", "provider": "openai", "model_name": "gpt 5; rm", "strategy": "zero_shot"},
     "model_name"),
    ([*JUDGE, "--from-run", "999"], {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot", "from_run": 999},
     "from_run"),
    ([*JUDGE, "--mode", "sideways"], {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "zero_shot", "mode": "sideways"},
     "mode"),
]


@pytest.mark.parametrize("options, body, field", ERRORS)
def test_bad_options_are_refused_with_the_forms_messages_and_change_nothing(client_as, admin_user, images, openai_server, broker,
                                                                            options, body, field):
    response = client_as(admin_user).post("/api/runs/", {"concurrency": 8, **body}, content_type="application/json")
    assert response.status_code == 400
    before = stored()
    message = refusal(*options, "--json")
    option = {"task": "--kind", "model_name": "--model"}.get(field, "--" + field.replace("_", "-"))
    assert message.splitlines() == [f"{option}: {text}" for text in response.json()[field]]
    assert stored() == before and broker == []


def test_an_unavailable_provider_is_refused_as_on_the_page(client_as, admin_user, images, no_provider_keys, broker):
    before = stored()
    message = refusal(*JUDGE, "--here")
    assert message.startswith("--provider: OpenAI is unavailable:")
    assert stored() == before


def test_a_selection_without_images_is_refused_with_the_launch_message(db, openai_server, broker):
    assert refusal(*JUDGE, "--split", "train") == ("--kind: judge severity runs cannot be launched yet: import images first: "
                                                   "the Import page, or manage.py import_vispr.")
    assert Run.objects.count() == 0


@pytest.mark.parametrize("options, message", [
    (["--sample", "0"], "--sample: Ensure this value is greater than or equal to 1."),
    (["--concurrency", "many"], "--concurrency: Enter a whole number."),
    (["--timeout", "5"], "--timeout goes with --wait."),
    (["--wait", "--here"], "not allowed with argument"),
    (["--mode", "batch", "--here", "--provider", "vllm", "--model", "Qwen/Qwen2.5-VL-7B-Instruct"], "--here: vLLM batch runs are offline"),
])
def test_options_that_cannot_work_are_refused_before_anything_is_stored(images, openai_server, vllm_server, broker, options, message):
    before = stored()
    assert message in refusal(*JUDGE, *options)
    assert stored() == before and broker == []


# --- --wait ---------------------------------------------------------------------------------------

def test_wait_gives_up_at_its_timeout_and_leaves_the_run_to_the_workers(images, openai_server, broker):
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"Run #\d+ is still queued after 0.3 s \(0/5 images\)"):
        call_command("launch_run", *JUDGE, "--wait", "--timeout", "0.3", "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert report["status"] == "queued" and Run.objects.get(pk=report["id"]).status == Run.STATUS_QUEUED


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_wait_json_waits_for_a_real_worker(make_image, monkeypatch, settings):
    images = [make_image(f"2017_{i:08d}", color=(i, 5 * i % 256, 11 * i % 256)) for i in range(1, 9)]
    with FakeOpenAIServer(record=False) as server:
        for name, value in {"OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_MAX_RPM": "0",
                            "CPRT_RUN_HEARTBEAT_S": "0.3"}.items():
            monkeypatch.setenv(name, value)
        settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = FAKE_KEY, server.url + "/v1"
        purge_broker()
        with celery_worker(queues="api", concurrency=2):
            report, _, progress = launch(*JUDGE, "--concurrency", "2", "--wait", "--timeout", "120", "--json")
    assert (report["status"], report["results"], report["errors"], report["total"]) == ("finished", 8, 0, 8)
    run = Run.objects.get(pk=report["id"])
    assert sorted(RunResult.objects.filter(run=run).values_list("image_id", flat=True)) == sorted(i.pk for i in images)
    assert RunLane.objects.get(run=run).dispatches >= 1  # the workers got it through the broker
    assert progress.splitlines()[0] == f"Run #{run.pk} launched over 8 images (judge openai/gpt-5.1, online)."
    assert progress.splitlines()[-1] == f"run #{run.pk} finished: 8/8 images (100%)"
