"""The operations knobs of the settings (docs/operations.md): readiness (/readyz, core/health.py) and
metrics (/metrics, core/metrics.py), read from the environment through cprt_site/env.py's typed helpers.
cprt_site/settings.py imports them, and wires what they need into the apps, middleware and beat
schedule."""
from django.core.exceptions import ImproperlyConfigured

from cprt_site.env import envfloat, envlist, envstr, secret

# /readyz (core/health.py): the queues that need a live worker (a queue no deployment serves, e.g. gpu
# without the gpu profile, is left out), how often a worker records its heartbeat, how old a heartbeat
# or beat's tick may be, the time every check together may take.
CPRT_READY_QUEUES = envlist("CPRT_READY_QUEUES", ["default", "api", "gpu"])
if not set(CPRT_READY_QUEUES) <= {"default", "api", "gpu"}:
    raise ImproperlyConfigured(f"CPRT_READY_QUEUES={','.join(CPRT_READY_QUEUES)!r} is not allowed: a list of default, api, gpu.")
CPRT_WORKER_HEARTBEAT_S = envfloat("CPRT_WORKER_HEARTBEAT_S", 15.0, min=1, max=3600)
CPRT_READY_WORKER_STALE_S = envfloat("CPRT_READY_WORKER_STALE_S", 60.0, min=1, max=24 * 3600)
CPRT_BEAT_TICK_S = envfloat("CPRT_BEAT_TICK_S", 30.0, min=1, max=3600)
CPRT_READY_BEAT_STALE_S = envfloat("CPRT_READY_BEAT_STALE_S", 120.0, min=1, max=24 * 3600)
CPRT_READY_TIMEOUT_S = envfloat("CPRT_READY_TIMEOUT_S", 1.5, min=0.1, max=60)
if CPRT_WORKER_HEARTBEAT_S >= CPRT_READY_WORKER_STALE_S:
    raise ImproperlyConfigured("CPRT_WORKER_HEARTBEAT_S must be shorter than CPRT_READY_WORKER_STALE_S.")
if CPRT_BEAT_TICK_S >= CPRT_READY_BEAT_STALE_S:
    raise ImproperlyConfigured("CPRT_BEAT_TICK_S must be shorter than CPRT_READY_BEAT_STALE_S.")

# /metrics (core/metrics.py): a bearer token (or CPRT_METRICS_TOKEN_FILE) and/or client networks allowed
# without one; with neither set, /metrics answers 404.
CPRT_METRICS_TOKEN = secret("CPRT_METRICS_TOKEN")
CPRT_METRICS_ALLOW = envlist("CPRT_METRICS_ALLOW", [])
# Several processes (gunicorn workers, Celery's pool) add to one set of counters through files in
# PROMETHEUS_MULTIPROC_DIR (compose: /data/metrics); unset, each process counts for itself.
PROMETHEUS_MULTIPROC_DIR = envstr("PROMETHEUS_MULTIPROC_DIR", "")
if PROMETHEUS_MULTIPROC_DIR:
    from core.metrics_files import use_shared_files

    use_shared_files(PROMETHEUS_MULTIPROC_DIR)
# Jobs counted by status at each scrape (model labels: the base layer imports no app above it).
CPRT_METRICS_JOB_MODELS = {"run": "inference.Run", "export": "scoring.ExportJob", "anonymization": "annotations.AnonymizationJob"}
