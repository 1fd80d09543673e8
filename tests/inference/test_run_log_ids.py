"""A run item deferred for something down (here Redis behind the rate limiter) is logged in the pool
thread that worked it, with the run's id as job id and the task's name (issue 36; core/logs.py)."""
from __future__ import annotations

import io
import logging
import re

import pytest

from core import logs
from core.secrets import ScrubFilter
from tests.fakes.fixtures import *  # noqa: F401,F403

TEXT_LINE = re.compile(r"^\S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) (\S+) \[req=(\S+) job=(\S+) task=(\S+)\] (.*)$")


@pytest.fixture
def log_lines():
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.addFilter(ScrubFilter())
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.TextFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: buffer.getvalue().splitlines()
    finally:
        root.removeHandler(handler)


@pytest.mark.django_db
def test_a_deferred_run_item_logs_with_the_run_s_job_id_and_task(openai_server, images, log_lines, monkeypatch,
                                                                 django_capture_on_commit_callbacks):
    import redis.exceptions

    from inference import item_calls, launching, prompts
    from inference.selection import Selection
    from inference.tasks import run_chunk

    spec = launching.LaunchSpec(task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", counterfactual_faces=False,
                                prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(), concurrency=2)
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec)
    real_call, calls = item_calls._call, {"n": 0}

    def call(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return real_call(*args, **kwargs)

    monkeypatch.setattr(item_calls, "_call", call)
    run_chunk.apply(args=[run.pk, run.image_ids[:2]]).get()
    deferred = [m.group(1, 3, 4, 5) for m in map(TEXT_LINE.match, log_lines()) if m and m.group(6).startswith("run item")]
    assert deferred and all(line == ("WARNING", "-", str(run.pk), "inference.run_chunk") for line in deferred), log_lines()
