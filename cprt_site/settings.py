"""Settings, all read from the environment through the typed helpers of cprt_site/env.py.

Defaults give the embedded setup: SQLite and a filesystem Celery broker under ``CPRT_DATA_DIR``
(``./var``). Production sets ``DATABASE_URL``, ``CELERY_BROKER_URL``, ``SECRET_KEY``,
``ALLOWED_HOSTS`` and ``DEBUG=0``; with DEBUG off the app refuses to start without a real secret
key and host list. Every knob is typed and bounded where it is read: a value out of its range, a
typo in a choice or a switch stops start-up with ImproperlyConfigured naming the variable, the
value and what is allowed. Secrets (``secret(...)``) may also come from a file named by ``NAME_FILE``.
"""
import zoneinfo
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from core.logs import FORMATS as LOG_FORMATS
from core.logs import logging_config
from cprt_site.security_headers import (  # noqa: F401 - cookie flags and response headers, the CSP among them
    CONTENT_SECURITY_POLICY, SECURE_CONTENT_TYPE_NOSNIFF, SECURE_REDIRECT_EXEMPT, SECURE_REFERRER_POLICY, SESSION_COOKIE_HTTPONLY, X_FRAME_OPTIONS)
from cprt_site.env import (SECRETS_READ, envbool, envchoice, envduration, envfloat, envint, envlist, envpath, envstr, envurl,
                           refuse, secret, secret_url)
from cprt_site.settings_operations import (  # noqa: F401 - /readyz and /metrics knobs (docs/operations.md)
    CPRT_BEAT_TICK_S, CPRT_METRICS_ALLOW, CPRT_METRICS_JOB_MODELS, CPRT_METRICS_TOKEN, CPRT_READY_BEAT_STALE_S, CPRT_READY_QUEUES,
    CPRT_READY_TIMEOUT_S, CPRT_READY_WORKER_STALE_S, CPRT_WORKER_HEARTBEAT_S, PROMETHEUS_MULTIPROC_DIR)

BASE_DIR = Path(__file__).resolve().parent.parent
# django-environ, kept for its URL parsers (DATABASE_URL, CACHE_URL); values are read with the helpers above.
env = environ.Env()
# Every value read through `secret()` (from NAME or NAME_FILE), by variable name: this is the helpers'
# own dict, so secrets read further down are in it too. core/secrets.py scrubs them everywhere.
CPRT_SECRETS_READ = SECRETS_READ

DEBUG = envbool("DEBUG", True)
DATA_DIR = envpath("CPRT_DATA_DIR", BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)

_DEV_SECRET = "dev-insecure-secret-key-only-for-local-debug-use"
SECRET_KEY = secret("SECRET_KEY", _DEV_SECRET if DEBUG else "")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")):
        raise refuse("CSRF_TRUSTED_ORIGINS", ",".join(CSRF_TRUSTED_ORIGINS), "comma-separated origins, each with its scheme (https://cprt.example.org)")


def weak_secret(value: str, min_length: int) -> str:
    """Why `value` is a placeholder rather than a secret ("" when it looks random enough)."""
    if "change-me" in value.lower():
        return 'contains "change-me" (the example value)'
    if len(value) < min_length:
        return f"is shorter than {min_length} characters"
    if len(set(value)) < 5:
        return "has fewer than 5 distinct characters"
    return ""


_MAKE_SECRET = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
if not DEBUG:
    if not SECRET_KEY:
        raise ImproperlyConfigured(f"DEBUG is off: set SECRET_KEY to a random value of at least 50 characters ({_MAKE_SECRET}).")
    if SECRET_KEY == _DEV_SECRET or weak_secret(SECRET_KEY, 50):
        reason = "is the development key" if SECRET_KEY == _DEV_SECRET else weak_secret(SECRET_KEY, 50)
        raise ImproperlyConfigured(f"DEBUG is off and SECRET_KEY {reason}: set a random value of at least 50 characters ({_MAKE_SECRET}).")
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("DEBUG is off: set ALLOWED_HOSTS (comma-separated host names).")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "simple_history",
    "axes",
    "csp",
    "core",
    "annotations",
    "inference",
    "scoring",
    # Every benchmark folder (benchmarks/<name>/apps.py): adding one is its folder, and no line here.
    *sorted(f"benchmarks.{p.parent.name}" for p in (BASE_DIR / "benchmarks").glob("*/apps.py")),
    "demo",
]

MIDDLEWARE = [
    # First, so that every log line of the request carries its id (core/logs.py).
    "core.logs.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "axes.middleware.AxesMiddleware",
    # A scoring page whose figures a job computes for the first time answers "being computed" (scoring/pending.py).
    "scoring.pending.PendingMiddleware",
]

ROOT_URLCONF = "cprt_site.urls"
WSGI_APPLICATION = "cprt_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # inference/: each run kind's page partials live in its folder (inference/kinds/<key>/).
        "DIRS": [BASE_DIR / "templates", BASE_DIR / "inference"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.roles.role_context",
            ],
        },
    },
]

# Database: SQLite under the data folder unless DATABASE_URL (or the file DATABASE_URL_FILE) says
# otherwise. POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE, the file compose's secret and the postgres
# image share) is the password of a PostgreSQL DATABASE_URL that has none.
DATABASE_URL = secret_url("DATABASE_URL", f"sqlite:///{DATA_DIR / 'cprt.sqlite3'}", ("sqlite", "postgres", "postgresql"))
POSTGRES_PASSWORD = secret("POSTGRES_PASSWORD")
DATABASES = {"default": environ.Env.db_url_config(DATABASE_URL)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and not DATABASES["default"].get("PASSWORD") and POSTGRES_PASSWORD:
    DATABASES["default"]["PASSWORD"] = POSTGRES_PASSWORD
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and immediate transactions let the web process and the worker write without "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    )
    # A file, not memory, so that a real worker process started by a test sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-cprt.sqlite3")}
DATABASES["default"]["CONN_MAX_AGE"] = envint("CONN_MAX_AGE", 0, min=0, max=86400)
if not DEBUG:
    # compose passes POSTGRES_PASSWORD to the app containers too (env_file); a database password that
    # is set must not be a placeholder either (an empty one is left to the server's own auth rules).
    _pg_name = "POSTGRES_PASSWORD_FILE" if envstr("POSTGRES_PASSWORD_FILE", "") else "POSTGRES_PASSWORD"
    for _name, _password in ((_pg_name, POSTGRES_PASSWORD), ("the password in DATABASE_URL", DATABASES["default"].get("PASSWORD") or "")):
        if _password and weak_secret(_password, 16):
            raise ImproperlyConfigured(f"DEBUG is off and {_name} {weak_secret(_password, 16)}: "
                                       f"set a random value of at least 16 characters ({_MAKE_SECRET}).")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "cprt_site.auth.ProfileModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 8 * 3600, min=60, max=90 * 24 * 3600)
# Cache: per-process memory by default; CACHE_URL=redis://... in production, shared by every process.
CACHE_URL = envurl("CACHE_URL", "locmemcache://", ("locmemcache", "dummycache", "filecache", "dbcache", "redis", "rediss", "rediscache"))
CACHES = {"default": environ.Env.cache_url_config(CACHE_URL)}
# A shared Redis cache fails soft: a connection error is logged and read as a miss (core/cache.py).
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"]["BACKEND"] = "core.cache.ResilientRedisCache"
    _cache_timeout = envfloat("CPRT_CACHE_TIMEOUT_S", 0.5, min=0.05, max=30)
    CACHES["default"].setdefault("OPTIONS", {}).update({"socket_connect_timeout": _cache_timeout, "socket_timeout": _cache_timeout})
# Sessions live in the database only: a page must not answer 500 while Redis is away (was cached_db).
SESSION_ENGINE = "django.contrib.sessions.backends.db"
# The labeling page shows "left in the queue" from a count at most this old (the queue page counts afresh).
CPRT_QUEUE_COUNT_TTL_S = envint("CPRT_QUEUE_COUNT_TTL_S", 30, min=0, max=3600)
# Scoring pages: a stale cached computation that took longer than this is recomputed by a job while
# the page shows the stored figures (scoring/services/cache.py); the refresh job's lease (renewed by its heartbeat).
CPRT_METRICS_INLINE_S = envfloat("CPRT_METRICS_INLINE_S", 0.5, min=0, max=3600)
# A first computation inside a request reading more rows than this is left to a job (scoring/services/cache.py).
CPRT_METRICS_INLINE_ROWS = envint("CPRT_METRICS_INLINE_ROWS", 2000, min=0, max=10**9)
CPRT_METRICS_REFRESH_STALE_S = envduration("CPRT_METRICS_REFRESH_STALE_S", 120.0, min=1.0, max=7 * 24 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True

# django-axes: lock an account+IP after repeated failed logins.
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 5, min=1, max=1000)
AXES_COOLOFF_TIME = envfloat("AXES_COOLOFF_HOURS", 0.25, min=0.001, max=24 * 365)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# How many proxies in front of Django append to X-Forwarded-For (docker-compose.yml: nginx, and the
# TLS proxy before it = 2). 0: no proxy, the socket address is the client (cprt_site.auth.client_ip).
CPRT_TRUSTED_PROXIES = envint("CPRT_TRUSTED_PROXIES", 0, min=0, max=10)
AXES_CLIENT_IP_CALLABLE = "cprt_site.auth.client_ip"

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (ValueError, zoneinfo.ZoneInfoNotFoundError):
    raise refuse("TIME_ZONE", TIME_ZONE, "an IANA time zone name such as UTC or Europe/Paris") from None
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# The image collects them at build time into /app/staticfiles (deploy/Dockerfile sets STATIC_ROOT).
STATIC_ROOT = envpath("STATIC_ROOT", DATA_DIR / "staticfiles")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Image bytes live here, outside STATIC_ROOT and with no MEDIA_URL: only a permission-checked view serves them.
PRIVATE_IMAGE_ROOT = envpath("PRIVATE_IMAGE_ROOT", DATA_DIR / "private-images")
# Finished dataset exports (zip files), also private: only admins download them, through a view.
CPRT_EXPORT_ROOT = envpath("CPRT_EXPORT_ROOT", DATA_DIR / "exports")
# Behind nginx (docker-compose.yml), Django checks permissions and answers with X-Accel-Redirect;
# nginx then sends the bytes from an `internal` location (deploy/nginx.conf). Off: Django streams them.
CPRT_X_ACCEL_REDIRECT = envbool("CPRT_X_ACCEL_REDIRECT", False)
# name -> folder; nginx maps /_protected/<name>/ to the same folder.
CPRT_PROTECTED_ROOTS = {"images": PRIVATE_IMAGE_ROOT, "exports": CPRT_EXPORT_ROOT}
CPRT_MAX_IMAGE_PIXELS = envint("CPRT_MAX_IMAGE_PIXELS", 40_000_000, min=1, max=1_000_000_000)
CPRT_MAX_IMAGE_BYTES = envint("CPRT_MAX_IMAGE_BYTES", 25 * 1024 * 1024, min=1, max=2 * 1024**3)
# VISPR attribute ids -> CPRT attributes (spec vispr-and-benchmarks.md §2): the project's data file unless replaced;
# after replacing it, `manage.py vispr_labels --rewrite` rewrites the `vispr` annotator's labels.
CPRT_VISPR_MAPPING_FILE = envpath("CPRT_VISPR_MAPPING_FILE", BASE_DIR / "annotations" / "data" / "vispr_mapping.json")
# Imports started from the browser (/annotations/imports/) read only folders and files under this root.
CPRT_IMPORT_ROOT = envpath("CPRT_IMPORT_ROOT", DATA_DIR / "imports")
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024, min=1024, max=2 * 1024**3)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# How many independent human labelings each image needs.
CPRT_LABELINGS_PER_IMAGE = envint("CPRT_LABELINGS_PER_IMAGE", 2, min=1, max=50)
# A draft with no answer, untouched this long, gives its slot back (beat task annotations.release_idle_drafts).
CPRT_DRAFT_IDLE_HOURS = envfloat("CPRT_DRAFT_IDLE_HOURS", 24.0, min=0.01, max=24 * 365)
# Draft autosaves by one user within this many seconds of each other share one history row (0: one per save).
CPRT_HISTORY_COALESCE_S = envduration("CPRT_HISTORY_COALESCE_S", 60.0, min=0, max=24 * 3600)

# Celery: filesystem broker under the data folder by default, redis:// in production.
# Redis delivers a message again when its task has not been acked after the visibility timeout (tasks
# ack late), so every task must end well before it: soft and hard time limits below it, checked here.
CPRT_BROKER_VISIBILITY_TIMEOUT_S = envint("CPRT_BROKER_VISIBILITY_TIMEOUT_S", 3600, min=60, max=7 * 24 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = envint("CPRT_TASK_SOFT_TIME_LIMIT_S", CPRT_BROKER_VISIBILITY_TIMEOUT_S * 3 // 4, min=1)
CELERY_TASK_TIME_LIMIT = envint("CPRT_TASK_TIME_LIMIT_S", CPRT_BROKER_VISIBILITY_TIMEOUT_S * 5 // 6, min=1)
# A run's chunk is sized to take about this long at the provider's rate limit (inference/chunks.py).
CPRT_RUN_CHUNK_TARGET_S = envduration("CPRT_RUN_CHUNK_TARGET_S", min(600.0, CELERY_TASK_SOFT_TIME_LIMIT / 4), min=0.001)
if not 0 < CELERY_TASK_SOFT_TIME_LIMIT < CELERY_TASK_TIME_LIMIT < CPRT_BROKER_VISIBILITY_TIMEOUT_S:
    raise ImproperlyConfigured(
        "Celery time limits must satisfy 0 < CPRT_TASK_SOFT_TIME_LIMIT_S < CPRT_TASK_TIME_LIMIT_S < "
        f"CPRT_BROKER_VISIBILITY_TIMEOUT_S; got {CELERY_TASK_SOFT_TIME_LIMIT} < {CELERY_TASK_TIME_LIMIT} < "
        f"{CPRT_BROKER_VISIBILITY_TIMEOUT_S}. A task still running at the visibility timeout is delivered twice."
    )
if not 0 < CPRT_RUN_CHUNK_TARGET_S <= CELERY_TASK_SOFT_TIME_LIMIT / 2:
    raise ImproperlyConfigured(
        f"CPRT_RUN_CHUNK_TARGET_S must be positive and at most half of the soft time limit "
        f"({CELERY_TASK_SOFT_TIME_LIMIT} s); got {CPRT_RUN_CHUNK_TARGET_S}."
    )
CELERY_BROKER_URL = envurl("CELERY_BROKER_URL", "filesystem://", ("filesystem", "redis", "rediss", "memory"))
BROKER_DIR = DATA_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        # kombu polls the folder; the default 1 s gap between chunks costs run throughput.
        "polling_interval": 0.1,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CPRT_BROKER_VISIBILITY_TIMEOUT_S}
_default_results = f"file://{DATA_DIR / 'celery-results'}" if CELERY_BROKER_URL.startswith("filesystem://") else CELERY_BROKER_URL
CELERY_RESULT_BACKEND = envurl("CELERY_RESULT_BACKEND", _default_results, ("file", "redis", "rediss", "cache+memory"))
if CELERY_RESULT_BACKEND.startswith("file://"):
    Path(CELERY_RESULT_BACKEND.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
# Outcomes live in the rows (jobs, runs, results), never in Celery's result store: a send whose result is
# tracked subscribes to a Redis result backend first, which fails while Redis is away (core/dispatch.py).
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 24 * 3600
# A broker outage (a Redis restart, failover or upgrade) is waited out, never a reason to stop:
# workers and beat reconnect forever (Celery's default gives up after 100 tries), also when the broker
# is down as they start. A chunk running when the connection drops goes on (it needs only the
# database; its lane's lease keeps every other copy off), so it is not cancelled. Redis broker URLs
# use cprt_site/broker_transport.py (celery/kombu 5.7.0 made a worker exit after a lost connection), and so do
# filesystem ones (kombu wrote a message file in place, so a consumer could read it empty and lose it).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Tokens die with a password change and are refused while the account is locked out.
        "core.accounts.LockoutAwareTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {"TITLE": "CPRT Workbench API", "VERSION": "1", "SERVE_INCLUDE_SCHEMA": False}

# Model providers: credentials only from the environment (or NAME_FILE), never stored.
OPENAI_API_KEY = secret("OPENAI_API_KEY")
OPENAI_BASE_URL = envurl("OPENAI_BASE_URL", "")
GEMINI_API_KEY = secret("GEMINI_API_KEY")
GEMINI_BASE_URL = envurl("GEMINI_BASE_URL", "")
VLLM_BASE_URL = envurl("VLLM_BASE_URL", "")
VLLM_API_KEY = secret("VLLM_API_KEY")
HF_TOKEN = secret("HF_TOKEN")
# A running export writes a heartbeat this often; beat marks one silent for CPRT_EXPORT_STALE_S failed (worker lost).
CPRT_EXPORT_HEARTBEAT_S = envduration("CPRT_EXPORT_HEARTBEAT_S", 30.0, min=0.05, max=3600)
CPRT_EXPORT_STALE_S = envduration("CPRT_EXPORT_STALE_S", 300.0, min=1.0, max=7 * 24 * 3600)
# An import started from the page (scoring/imports.py): heartbeat, and silence after which its worker counts as lost.
CPRT_IMPORT_HEARTBEAT_S = envduration("CPRT_IMPORT_HEARTBEAT_S", 10.0, min=0.05, max=3600)
CPRT_IMPORT_STALE_S = envduration("CPRT_IMPORT_STALE_S", 900.0, min=1.0, max=7 * 24 * 3600)
# Face anonymization jobs (annotations/faces): threads per job, heartbeat, silence after which a job is resumable.
CPRT_FACES_THREADS = envint("CPRT_FACES_THREADS", 2, min=1, max=64)
CPRT_FACES_HEARTBEAT_S = envduration("CPRT_FACES_HEARTBEAT_S", 5.0, min=0.05, max=3600)
CPRT_FACES_STALE_S = envduration("CPRT_FACES_STALE_S", 120.0, min=1.0, max=7 * 24 * 3600)
HF_ENDPOINT = envurl("HF_ENDPOINT", "")  # another Hub (a mirror, the tests' fake); empty: huggingface.co


# Runs and providers (read by inference; tests override them through Django's `settings`).
# Seconds one provider request may take before it counts as a (retryable) timeout.
CPRT_PROVIDER_TIMEOUT_S = envduration("CPRT_PROVIDER_TIMEOUT_S", 120.0, min=0.05, max=3600)
# Attempts per request (first try included) for retryable failures; backoff doubles from _S up to _MAX_S.
CPRT_PROVIDER_MAX_ATTEMPTS = envint("CPRT_PROVIDER_MAX_ATTEMPTS", 5, min=1, max=100)
CPRT_PROVIDER_BACKOFF_S = envduration("CPRT_PROVIDER_BACKOFF_S", 1.0, min=0.0, max=3600)
CPRT_PROVIDER_BACKOFF_MAX_S = envduration("CPRT_PROVIDER_BACKOFF_MAX_S", 60.0, min=0.0, max=3600)
# A run pauses itself (stop_reason, Resume after the fix) when this many items in a row failed (each
# after every attempt, or rejected) with no answer between, or when its provider failed for this long.
CPRT_RUN_PAUSE_AFTER_FAILURES = envint("CPRT_RUN_PAUSE_AFTER_FAILURES", 6, min=1, max=1_000_000)
CPRT_RUN_PAUSE_AFTER_S = envduration("CPRT_RUN_PAUSE_AFTER_S", 600.0, min=1.0, max=7 * 24 * 3600)
# Minimum images per chunk task (chunks hold up to 200 x the lane's concurrency, see inference.dispatch).
CPRT_RUN_CHUNK_SIZE = envint("CPRT_RUN_CHUNK_SIZE", 50, min=1, max=100_000)
# Most requests one chunk task keeps in flight. A run with a higher concurrency is split into
# ceil(concurrency / this) lanes (inference/leases.py) that run on separate worker processes, because one
# Python process tops out at ~200 requests/s of SDK work, and loses efficiency to GIL contention well
# before that (measured: 0.93 of ideal at 16 in flight, 0.86 at 32).
CPRT_RUN_LANE_CONCURRENCY = envint("CPRT_RUN_LANE_CONCURRENCY", 16, min=1, max=1024)
# A lane whose worker has not renewed its lease for CPRT_RUN_STALE_S is re-dispatched by the reconciler;
# a lane no worker has claimed yet (queued work) never is.
CPRT_RUN_STALE_S = envduration("CPRT_RUN_STALE_S", 180.0, min=1.0, max=7 * 24 * 3600)
CPRT_RUN_HEARTBEAT_S = envduration("CPRT_RUN_HEARTBEAT_S", 2.0, min=0.05, max=3600)
CPRT_RECONCILE_EVERY_S = envduration("CPRT_RECONCILE_EVERY_S", 60.0, min=1.0, max=24 * 3600)
# A queued job whose message the broker has not taken this long after it was queued is sent again by the reconciler.
CPRT_JOB_SEND_GRACE_S = envduration("CPRT_JOB_SEND_GRACE_S", 30.0, min=1.0, max=24 * 3600)
# Requests per minute allowed for a provider, shared by every worker; 0 means no limit.
OPENAI_MAX_RPM = envint("OPENAI_MAX_RPM", 500, min=0, max=10_000_000)
GEMINI_MAX_RPM = envint("GEMINI_MAX_RPM", 300, min=0, max=10_000_000)
VLLM_MAX_RPM = envint("VLLM_MAX_RPM", 0, min=0, max=10_000_000)
# Pixel budget for images sent to vLLM (downscaled client-side, aspect ratio kept).
VLLM_MAX_PIXELS = envint("VLLM_MAX_PIXELS", 1_003_520, min=1024, max=1_000_000_000)
# Redis for the shared rate limiter; empty: the broker when it is Redis, else a SQLite file (one host).
CPRT_RATE_LIMIT_URL = envurl("CPRT_RATE_LIMIT_URL", "", ("redis", "rediss"))
# Batch runs (inference/batch): per-file limits (the providers' own caps apply too), Gemini's inline
# size, the poll interval, the providers' completion window, when a dead poller's ingest claim lapses.
CPRT_BATCH_MAX_REQUESTS = envint("CPRT_BATCH_MAX_REQUESTS", 50_000, min=1, max=50_000)
CPRT_BATCH_MAX_BYTES = envint("CPRT_BATCH_MAX_BYTES", 200 * 1024 * 1024, min=1024, max=2 * 1024**3)
CPRT_BATCH_GEMINI_INLINE_MAX_BYTES = envint("CPRT_BATCH_GEMINI_INLINE_MAX_BYTES", 20 * 1024 * 1024, min=0, max=20 * 1024 * 1024)
CPRT_BATCH_POLL_S = envduration("CPRT_BATCH_POLL_S", 60.0, min=1.0, max=24 * 3600)
CPRT_BATCH_WINDOW_H = envfloat("CPRT_BATCH_WINDOW_H", 24.0, min=0.01, max=24 * 30)
CPRT_BATCH_INGEST_STALE_S = envduration("CPRT_BATCH_INGEST_STALE_S", 600.0, min=1.0, max=7 * 24 * 3600)
# vLLM batch runs: "offline" (batch_export / run_batch / batch_ingest on a GPU machine) or "api".
VLLM_BATCH_MODE = envchoice("VLLM_BATCH_MODE", "offline", ("offline", "api"))

# A heartbeat at least as slow as the silence that declares its worker lost would fail live jobs.
for _beat, _stale in (("CPRT_RUN_HEARTBEAT_S", "CPRT_RUN_STALE_S"), ("CPRT_EXPORT_HEARTBEAT_S", "CPRT_EXPORT_STALE_S"),
                      ("CPRT_IMPORT_HEARTBEAT_S", "CPRT_IMPORT_STALE_S"), ("CPRT_FACES_HEARTBEAT_S", "CPRT_FACES_STALE_S")):
    if not globals()[_beat] < globals()[_stale]:
        raise ImproperlyConfigured(f"{_beat} ({globals()[_beat]} s) must be shorter than {_stale} ({globals()[_stale]} s): "
                                   "a live job would be taken for lost.")
if CPRT_PROVIDER_BACKOFF_S > CPRT_PROVIDER_BACKOFF_MAX_S:
    raise ImproperlyConfigured(f"CPRT_PROVIDER_BACKOFF_S ({CPRT_PROVIDER_BACKOFF_S}) must not exceed "
                               f"CPRT_PROVIDER_BACKOFF_MAX_S ({CPRT_PROVIDER_BACKOFF_MAX_S}).")

# Periodic jobs (celery beat): the apps own the tasks, the project owns the schedule.
CELERY_BEAT_SCHEDULE = {
    "annotations.release_idle_drafts": {"task": "annotations.release_idle_drafts", "schedule": 3600.0, "options": {"queue": "default"}},
    # One reconciler for every kind of job (core/reconcile.py): runs' lanes, exports, imports, face
    # anonymization, dataset builds; it alone asks the broker whether it lost its messages.
    "core.reconcile_jobs": {"task": "core.reconcile_jobs", "schedule": CPRT_RECONCILE_EVERY_S, "options": {"queue": "default"}},
    "inference.poll_batches": {"task": "inference.poll_batches", "schedule": CPRT_BATCH_POLL_S, "options": {"queue": "default"}},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", True)
    # TLS terminates in the proxy in front of nginx, which redirects http to https and sets
    # X-Forwarded-Proto (SECURE_PROXY_SSL_HEADER); Django redirects too only when asked.
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31536000, min=0, max=2 * 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Preloading is a commitment for the whole domain (hstspreload.org): opt in.
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
    # Both are decisions (docs/operations.md), so `check --deploy` is told instead of warning: the proxy
    # in front terminates TLS and redirects (W008), and preloading is opt-in (W021).
    SILENCED_SYSTEM_CHECKS = [check for check, on in (("security.W008", SECURE_SSL_REDIRECT), ("security.W021", SECURE_HSTS_PRELOAD)) if not on]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# One line per event: timestamp, level, logger, request id, job id, task (core/logs.py); plain text,
# or one JSON object per line with LOG_FORMAT=json. Log records are scrubbed of configured secrets
# (messages and tracebacks) as they are created, and again by the handler filter
# (core.secrets.scrub_filter), in every process that configures logging. Celery workers and beat use
# this configuration too (cprt_site/celery.py), and so does gunicorn (deploy/gunicorn.conf.py).
LOG_LEVEL = envchoice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOG_FORMAT = envchoice("LOG_FORMAT", "text", LOG_FORMATS)
LOGGING = logging_config(LOG_LEVEL, LOG_FORMAT)

# --- operations (health, metrics): docs/operations.md; their knobs are read in cprt_site/settings_operations.py ---
# PostgreSQL: give up connecting after this many seconds (readiness answers within ~2 s; libpq waits forever).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", envint("CPRT_DB_CONNECT_TIMEOUT_S", 5, min=1, max=300))

CELERY_BEAT_SCHEDULE["core.beat_tick"] = {
    "task": "core.beat_tick", "schedule": CPRT_BEAT_TICK_S,
    # A tick that waits in the queue longer than its period is dropped, not recorded late.
    "options": {"queue": "default", "expires": CPRT_BEAT_TICK_S},
}

INSTALLED_APPS.append("django_prometheus")
MIDDLEWARE = ["django_prometheus.middleware.PrometheusBeforeMiddleware", *MIDDLEWARE, "django_prometheus.middleware.PrometheusAfterMiddleware"]
