"""pytest fixtures for the inference tests: fake provider servers wired into settings, runs, images.

Import them into a test module with `from tests.fakes.fixtures import *  # noqa: F401,F403`.
"""
from __future__ import annotations

import pytest

from .gemini_server import FakeGeminiServer
from .openai_server import FakeOpenAIServer

FAKE_KEY = "sk-fake-test-key-not-a-secret"


@pytest.fixture
def fast_retries(settings):
    settings.CPRT_PROVIDER_BACKOFF_S = 0.01
    settings.CPRT_PROVIDER_BACKOFF_MAX_S = 0.05
    settings.CPRT_PROVIDER_TIMEOUT_S = 5.0
    settings.CPRT_RUN_HEARTBEAT_S = 0.2
    settings.OPENAI_MAX_RPM = 0
    settings.GEMINI_MAX_RPM = 0
    settings.VLLM_MAX_RPM = 0
    return settings


@pytest.fixture
def openai_server(fast_retries):
    with FakeOpenAIServer() as server:
        fast_retries.OPENAI_API_KEY = FAKE_KEY
        fast_retries.OPENAI_BASE_URL = server.url + "/v1"
        yield server


@pytest.fixture
def vllm_server(fast_retries):
    with FakeOpenAIServer() as server:
        fast_retries.VLLM_BASE_URL = server.url + "/v1"
        fast_retries.VLLM_API_KEY = ""
        yield server


@pytest.fixture
def gemini_server(fast_retries):
    with FakeGeminiServer() as server:
        fast_retries.GEMINI_API_KEY = FAKE_KEY
        fast_retries.GEMINI_BASE_URL = server.url
        yield server


@pytest.fixture
def no_provider_keys(settings):
    settings.OPENAI_API_KEY = ""
    settings.GEMINI_API_KEY = ""
    settings.VLLM_BASE_URL = ""
    return settings


@pytest.fixture
def images(make_image):
    """Five test-split images with distinct bytes (so the fake model's answers differ)."""
    return [make_image(f"2017_{i:08d}", color=(10 * i, 255 - 10 * i, 7 * i)) for i in range(1, 6)]


@pytest.fixture
def eager_celery():
    """Run dispatched tasks in-process (the on-commit dispatch still needs the block to commit)."""
    from cprt_site.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield app
    finally:
        app.conf.task_always_eager = old
