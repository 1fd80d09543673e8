"""No configured secret in any stored text, even when a model echoes it inside a normal answer.

An echoing fake model puts the configured OPENAI_API_KEY into every text of its answers (a judge's
reasoning, each stage-1 rationale, the test kind's reasoning, hence the raw replies too). Each run
kind is driven through it (annotate online and in batch mode, whose stage-1 answers are kept between
the stages); then no database row, run page, review page or API answer may hold the key.
"""
from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from core.secrets import REDACTED
from inference import execution, launching, prompts
from inference.batch import lifecycle as batch_lifecycle
from inference.models import Run, RunResult
from inference.selection import Selection
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.server import model_answer, schema_kind
from tests.support.same_kind import same_kind  # noqa: F401


def _echo(value, key: str):
    """The answer with the key appended to every free text (each "reasoning"), so it stays valid."""
    if isinstance(value, dict):
        return {k: f"{v} (the key I was called with: {key})" if k == "reasoning" else _echo(v, key) for k, v in value.items()}
    return value


class EchoingModel(ofake.FakeOpenAIServer):
    """Well-formed answers whose every free text carries the caller's key (read from its Authorization header)."""

    def reply_for(self, path, payload, headers):
        key = headers.get("authorization", "").split(" ", 1)[-1]
        text, image, schema, _ = ofake.request_parts(payload)
        answer = model_answer(schema_kind(schema), schema, image, text, ofake.request_images(payload))
        return ofake.ok(_echo(answer, key))


@pytest.fixture
def echoing_model(fast_retries):
    with EchoingModel() as server:
        fast_retries.OPENAI_API_KEY = FAKE_KEY
        fast_retries.OPENAI_BASE_URL = server.url + "/v1"
        yield server


def database_dump() -> str:
    """Every row of every table, as text."""
    parts = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            parts.extend(f"{table}: {row!r}" for row in cursor.fetchall())
    return "\n".join(parts)


def launch(task: str, mode: str = Run.MODE_ONLINE) -> Run:
    strategy = "zero_shot" if task == "judge" else ""
    version = prompts.DEFAULT_VERSION.get(task, "same-v1")
    spec = launching.LaunchSpec(task, "openai", "gpt-5.1", strategy, False, version, Selection(), 2, mode=mode)
    return launching.launch_run(None, spec)


def test_a_key_echoed_in_every_kind_of_answer_is_stored_and_shown_nowhere(echoing_model, same_kind, images, admin_user, client_as):
    runs = [launch("judge"), launch("annotate"), launch("same")]
    for run in runs:
        execution.run_chunk(run.pk, run.image_ids)
    batch = launch("annotate", Run.MODE_BATCH)
    for _ in range(8):
        batch_lifecycle.step(batch.pk)
        batch.refresh_from_db()
        if batch.status == Run.STATUS_FINISHED:
            break
    runs.append(batch)
    for run in runs:
        run.refresh_from_db()
        assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 5}, (run.task, run.status, run.error)
    # The model did echo the key, and what it said was kept, with the key redacted.
    assert all(FAKE_KEY in str(r["json"]) or FAKE_KEY in r["headers"].get("authorization", "") for r in echoing_model.requests)
    reasoning = RunResult.objects.filter(run=runs[0]).values_list("reasoning", flat=True)[0]
    assert reasoning.startswith("fake judgement") and REDACTED in reasoning

    assert FAKE_KEY not in database_dump(), "a model-echoed key is stored in the database"
    client = client_as(admin_user)
    urls = ["/runs/", "/api/runs/"]
    for run in runs:
        urls += [f"/runs/{run.pk}/", f"/api/runs/{run.pk}/"]
    urls += [reverse("scoring:review", args=[image.pk]) for image in images]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert FAKE_KEY not in response.content.decode(), f"a model-echoed key is shown on {url}"
