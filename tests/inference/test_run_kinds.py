"""Run kinds (inference.kinds): the registry, and a test-only kind (two images per item) that the engine
runs end to end against the fake OpenAI server, online and in batch mode, without knowing it."""
from __future__ import annotations

import pytest

from inference import kinds, launching
from inference.batch import lifecycle as batch_lifecycle
from inference.models import Run, RunResult
from inference.selection import Selection
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.openai_server import request_images
from tests.support.same_kind import same_kind  # noqa: F401


def test_production_registers_every_kind_under_its_run_task_key():
    from inference import benchmarks

    core = ["annotate", "judge"]
    # then every benchmark folder's kinds, registered at start-up (inference.benchmarks)
    assert list(kinds.KINDS) == core + [k.key for b in benchmarks.all_benchmarks() for k in b.kinds]
    assert kinds.get("judge").stages == ("judge",) and kinds.get("annotate").stages == ("stage1", "stage2")
    with pytest.raises(ValueError, match="Unknown run kind 'nope'"):
        kinds.get("nope")


def _images(make_image):
    """Four images; the 2nd and 3rd have the same bytes, so only the pair (2nd, 3rd) is the same picture."""
    colors = [(10, 200, 30), (90, 90, 90), (90, 90, 90), (250, 10, 120)]
    return [make_image(f"2017_{i:08d}", color=c) for i, c in enumerate(colors, start=1)]


def _image_bytes(image):
    with image.file.open("rb") as fh:
        return fh.read()


def test_a_kind_added_by_its_folder_and_one_registry_line_runs_end_to_end(
        same_kind, openai_server, make_image, admin_user, client_as, django_capture_on_commit_callbacks, eager_celery):
    images = _images(make_image)
    # Launched through the API, like any kind: the form offers it and its version is the default.
    client = client_as(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs/", {"task": "same", "provider": "openai", "model_name": "gpt-5.1", "concurrency": 2},
                               content_type="application/json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.prompt_version == "same-v1" and run.status == Run.STATUS_FINISHED and run.annotator_id is None
    assert run.estimate["requests"] == 4

    # Each item's request carried its two images, in order: the image, then the next one of the run.
    data = [_image_bytes(i) for i in images]
    sent = sorted(tuple(request_images(r["json"])) for r in openai_server.requests)
    assert sent == sorted((data[k], data[(k + 1) % 4]) for k in range(4))
    ids = [i.pk for i in images]

    scores = dict(RunResult.objects.filter(run=run, outcome=RunResult.OUTCOME_OK).values_list("image_id", "score"))
    assert scores == {ids[0]: 0.0, ids[1]: 1.0, ids[2]: 0.0, ids[3]: 0.0}
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and "fake comparison of 2 images" in page.content.decode()


def test_the_test_kind_runs_in_batch_mode_too(same_kind, openai_server, make_image, admin_user):
    images = _images(make_image)
    spec = launching.LaunchSpec("same", "openai", "gpt-5.1", "", False, "same-v1", Selection(), 2, mode=Run.MODE_BATCH)
    run = launching.launch_run(admin_user, spec)
    for _ in range(6):
        batch_lifecycle.step(run.pk)
        run.refresh_from_db()
        if run.status == Run.STATUS_FINISHED:
            break
    assert run.status == Run.STATUS_FINISHED, run.error
    ids = [i.pk for i in images]
    scores = dict(RunResult.objects.filter(run=run, outcome=RunResult.OUTCOME_OK).values_list("image_id", "score"))
    assert scores == {ids[0]: 0.0, ids[1]: 1.0, ids[2]: 0.0, ids[3]: 0.0}


def test_an_unknown_kind_is_refused_at_launch_with_a_clear_message(openai_server, images, admin_user, client_as):
    response = client_as(admin_user).post("/api/runs/", {"task": "same", "provider": "openai", "model_name": "gpt-5.1", "concurrency": 2},
                                          content_type="application/json")
    assert response.status_code == 400 and "task" in response.json()
    assert not Run.objects.exists()
