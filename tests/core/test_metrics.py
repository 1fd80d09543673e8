"""/metrics: Prometheus text behind a token or an address allow-list; our counters and scrape-time gauges."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from core import metrics
from cprt_site.celery import ping
from inference.models import Run
from tests.support.workers import ROOT, purge_broker

TOKEN = "m3tr1cs-T0ken-for-the-tests-only-xyz"


@pytest.fixture
def token(settings):
    settings.CPRT_METRICS_TOKEN = TOKEN
    settings.CPRT_METRICS_ALLOW = []
    return TOKEN


def scrape(client, **headers) -> dict:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=")
    return {family.name: family for family in text_string_to_metric_families(response.content.decode())}


def value(families: dict, family: str, **labels) -> float:
    samples = [s for s in families[family].samples if s.name in (family, f"{family}_total") and all(s.labels.get(k) == v for k, v in labels.items())]
    return sum(s.value for s in samples)


@pytest.mark.django_db
def test_metrics_answer_404_when_not_configured(client, settings):
    settings.CPRT_METRICS_TOKEN, settings.CPRT_METRICS_ALLOW = "", []
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("header", [None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer ", TOKEN])
def test_metrics_refuse_a_missing_or_wrong_token(client, token, header):
    headers = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 403
    assert b"cprt_" not in response.content


@pytest.mark.django_db
def test_metrics_allow_listed_networks(client, settings):
    settings.CPRT_METRICS_TOKEN, settings.CPRT_METRICS_ALLOW = "", ["10.0.0.0/8", "::1"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5").status_code == 403
    assert client.post("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 405


@pytest.mark.django_db
def test_scrape_has_request_latency_jobs_queues_and_our_counters(client, token, admin_user):
    Run.objects.create(task="judge", provider="openai", model_name="gpt-a", strategy="zero_shot", prompt_version="judge-v1", status="finished")
    Run.objects.create(task="judge", provider="openai", model_name="gpt-b", strategy="zero_shot", prompt_version="judge-v1", status="failed")
    client.force_login(admin_user)
    assert client.get("/").status_code == 200
    families = scrape(client, HTTP_AUTHORIZATION=f"Bearer {token}")

    latency = families["django_http_requests_latency_seconds_by_view_method"]
    assert latency.type == "histogram"
    assert any(s.labels.get("view") == "home" for s in latency.samples)

    assert families["cprt_jobs"].type == "gauge"
    assert value(families, "cprt_jobs", kind="run", status="finished") == 1
    assert value(families, "cprt_jobs", kind="run", status="failed") == 1
    assert value(families, "cprt_jobs", kind="run", status="running") == 0
    assert {"run", "export", "anonymization"} <= {s.labels["kind"] for s in families["cprt_jobs"].samples}
    assert {s.labels["queue"] for s in families["cprt_queue_depth"].samples} == {"default", "api", "gpu"}
    assert value(families, "cprt_broker_up") == 1
    for family in ("cprt_provider_calls", "cprt_provider_errors", "cprt_provider_retries", "cprt_labeling_saves"):
        assert families[family].type == "counter", family


@pytest.mark.django_db
def test_counters_move_when_called(client, token):
    before = scrape(client, HTTP_AUTHORIZATION=f"Bearer {token}")
    metrics.provider_call("openai", "ok")
    metrics.provider_call("openai", "ok")
    metrics.provider_call("gemini", "error")
    metrics.provider_error("gemini", "timeout")
    metrics.provider_retry("gemini")
    metrics.labeling_save("submit")
    after = scrape(client, HTTP_AUTHORIZATION=f"Bearer {token}")

    def moved(family, **labels):
        return value(after, family, **labels) - value(before, family, **labels)

    assert moved("cprt_provider_calls", provider="openai", outcome="ok") == 2
    assert moved("cprt_provider_calls", provider="gemini", outcome="error") == 1
    assert moved("cprt_provider_errors", provider="gemini", kind="timeout") == 1
    assert moved("cprt_provider_retries", provider="gemini") == 1
    assert moved("cprt_labeling_saves", action="submit") == 1
    assert moved("cprt_provider_calls", provider="vllm") == 0


@pytest.mark.django_db
def test_queue_depth_counts_waiting_messages(client, token):
    purge_broker()
    try:
        for _ in range(3):
            ping.apply_async(queue="gpu")
        families = scrape(client, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert value(families, "cprt_queue_depth", queue="gpu") == 3
        assert value(families, "cprt_queue_depth", queue="api") == 0
    finally:
        purge_broker()


def test_the_token_can_come_from_a_file_and_counters_add_up_across_processes(tmp_path):
    """CPRT_METRICS_TOKEN_FILE, and PROMETHEUS_MULTIPROC_DIR: two processes' counters in one scrape."""
    (tmp_path / "token").write_text(TOKEN + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CPRT_METRICS_TOKEN", "PROMETHEUS_MULTIPROC_DIR")}
    env.update(CPRT_METRICS_TOKEN_FILE=str(tmp_path / "token"), PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom"),
               DJANGO_SETTINGS_MODULE="cprt_site.settings")
    count = "import django; django.setup(); from core import metrics; metrics.provider_call('openai', 'ok')"
    for _ in range(2):
        subprocess.run([sys.executable, "-c", count], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    read = (
        "import django; django.setup(); from django.conf import settings; from prometheus_client import generate_latest; "
        "from core import metrics; print(settings.CPRT_METRICS_TOKEN); print(generate_latest(metrics.counted_registry()).decode())"
    )
    result = subprocess.run([sys.executable, "-c", read], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    first, _, text = result.stdout.partition("\n")
    assert first == TOKEN
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert value(families, "cprt_provider_calls", provider="openai", outcome="ok") == 2
