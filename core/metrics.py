"""Prometheus metrics: our counters, the gauges computed at scrape time, and the protected `/metrics` view.

django-prometheus (middleware in settings) measures requests: latency by view, status codes. Here:
- counters that the code paths call: `provider_call(provider, outcome)`, `provider_error(provider,
  kind)`, `provider_retry(provider)`, `run_paused(reason)`, `labeling_save(action)`;
- gauges computed when Prometheus scrapes: jobs per kind and status (CPRT_METRICS_JOB_MODELS: model
  labels, so that this base layer imports no app above it), jobs paused per kind and reason (those
  models with a `stop_reason` field), messages waiting per Celery queue.
Counters are incremented in web processes and in Celery workers alike. With PROMETHEUS_MULTIPROC_DIR
set (compose: a folder of the shared data volume) every process writes its values to files there and
the scrape sums them (prometheus_client's multiprocess mode); unset, a scrape sees only the counts of
the process that answers it.

`/metrics` answers only a request with `Authorization: Bearer <CPRT_METRICS_TOKEN>` or from an
address in CPRT_METRICS_ALLOW (networks); 403 otherwise, and 404 when neither is configured.
"""
from __future__ import annotations

import hmac
import ipaddress
import os

from django.apps import apps
from django.conf import settings
from django.db.models import Count
from django.http import Http404, HttpResponse, HttpResponseForbidden
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from . import broker


PROVIDER_CALLS = Counter(
    "cprt_provider_calls", "Requests sent to a model provider, by outcome (ok, error, refused, invalid ...).", ["provider", "outcome"])
PROVIDER_ERRORS = Counter(
    "cprt_provider_errors", "Provider requests that failed, by kind of error (timeout, rate_limit, server, client ...).", ["provider", "kind"])
PROVIDER_RETRIES = Counter("cprt_provider_retries", "Provider requests sent again after a retryable failure.", ["provider"])
LABELING_SAVES = Counter("cprt_labeling_saves", "Labelings saved by reviewers, by action (draft, submit ...).", ["action"])
RUN_PAUSES = Counter("cprt_run_pauses", "Runs that paused themselves, by reason (auth, no_model, not_api, provider_failing ...).", ["reason"])


def provider_call(provider: str, outcome: str) -> None:
    PROVIDER_CALLS.labels(provider=provider, outcome=outcome).inc()


def provider_error(provider: str, kind: str) -> None:
    PROVIDER_ERRORS.labels(provider=provider, kind=kind).inc()


def provider_retry(provider: str) -> None:
    PROVIDER_RETRIES.labels(provider=provider).inc()


def run_paused(reason: str) -> None:
    RUN_PAUSES.labels(reason=reason).inc()


def labeling_save(action: str) -> None:
    LABELING_SAVES.labels(action=action).inc()


class ScrapeTimeCollector:
    """Counts read from the database and the broker when Prometheus scrapes."""

    def collect(self):
        jobs = GaugeMetricFamily("cprt_jobs", "Background jobs by kind and status.", labels=["kind", "status"])
        for kind, label in settings.CPRT_METRICS_JOB_MODELS.items():
            model = apps.get_model(label)
            counts = dict.fromkeys((value for value, _ in model._meta.get_field("status").choices), 0)
            counts.update(dict(model.objects.order_by().values_list("status").annotate(n=Count("pk"))))
            for status, n in sorted(counts.items()):
                jobs.add_metric([kind, status], n)
        yield jobs

        paused = GaugeMetricFamily("cprt_jobs_paused", "Jobs that paused themselves and wait for a Resume, by kind and reason.",
                                   labels=["kind", "reason"])
        for kind, label in settings.CPRT_METRICS_JOB_MODELS.items():
            model = apps.get_model(label)
            if not any(f.name == "stop_reason" for f in model._meta.get_fields()):
                continue
            rows = model.objects.filter(status="failed").exclude(stop_reason="").order_by().values_list("stop_reason").annotate(n=Count("pk"))
            for reason, n in sorted(rows):
                paused.add_metric([kind, reason], n)
        yield paused

        depth = GaugeMetricFamily("cprt_queue_depth", "Messages waiting in a Celery queue (not yet taken by a worker).", labels=["queue"])
        up = GaugeMetricFamily("cprt_broker_up", "1 when the broker answered this scrape.")
        try:
            depths = broker.queue_depths(["default", "api", "gpu"], timeout=1.0)
        except Exception:
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
            for queue, n in depths.items():
                depth.add_metric([queue], n)
        yield depth
        yield up


def counted_registry() -> CollectorRegistry:
    """The request metrics and our counters: this process's, or every process's in multiprocess mode."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    from prometheus_client import multiprocess

    counted = CollectorRegistry()
    multiprocess.MultiProcessCollector(counted)
    return counted


def exposition() -> bytes:
    """The text a scrape gets: the request and counter metrics, then the scrape-time gauges."""
    scraped = CollectorRegistry(auto_describe=False)
    scraped.register(ScrapeTimeCollector())
    return generate_latest(counted_registry()) + generate_latest(scraped)


def _client_allowed(request) -> bool:
    address = request.META.get("REMOTE_ADDR", "")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in ipaddress.ip_network(network, strict=False) for network in settings.CPRT_METRICS_ALLOW)


def _token_matches(request) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    expected = settings.CPRT_METRICS_TOKEN
    return bool(expected) and scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected.encode())


@never_cache
@require_GET
def metrics_view(request):
    if not settings.CPRT_METRICS_TOKEN and not settings.CPRT_METRICS_ALLOW:
        raise Http404("metrics are not configured")
    if not (_token_matches(request) or _client_allowed(request)):
        return HttpResponseForbidden(
            "a bearer token (CPRT_METRICS_TOKEN) or an allowed address (CPRT_METRICS_ALLOW) is needed\n", content_type="text/plain")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
