"""Settings, all read from the environment (django-environ).

Defaults give the embedded setup: SQLite and a filesystem Celery broker under ``CPRT_DATA_DIR``
(``./var``). Production sets ``DATABASE_URL``, ``CELERY_BROKER_URL``, ``SECRET_KEY``,
``ALLOWED_HOSTS`` and ``DEBUG=0``; with DEBUG off the app refuses to start without a real secret
key and host list.
"""
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

DEBUG = env.bool("DEBUG", default=True)
DATA_DIR = Path(env.str("CPRT_DATA_DIR", default=str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

_DEV_SECRET = "dev-insecure-secret-key-only-for-local-debug-use"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET if DEBUG else "")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])



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
    "demo",
]

MIDDLEWARE = [
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

# Database: SQLite under the data folder unless DATABASE_URL says otherwise.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'cprt.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and immediate transactions let the web process and the worker write without "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    )
    # A file, not memory, so that a real worker process started by a test sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-cprt.sqlite3")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=0)
if not DEBUG:
    # compose passes POSTGRES_PASSWORD to the app containers too (env_file); a database password that
    # is set must not be a placeholder either (an empty one is left to the server's own auth rules).
    for _name, _password in (("POSTGRES_PASSWORD", env.str("POSTGRES_PASSWORD", default="")), ("the password in DATABASE_URL", DATABASES["default"].get("PASSWORD") or "")):
        if _password and weak_secret(_password, 16):
            raise ImproperlyConfigured(f"DEBUG is off and {_name} {weak_secret(_password, 16)}: set a random value of at least 16 characters ({_MAKE_SECRET}).")

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
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=8 * 3600)
# Cache: per-process memory by default; CACHE_URL=redis://... in production, shared by every process.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}
CPRT_SHARED_CACHE = not CACHES["default"]["BACKEND"].endswith("LocMemCache")
# Sessions live in the database; with a shared cache they are read through it (one query less per
# request). Never through a per-process cache: a logout would not reach the other processes.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db" if CPRT_SHARED_CACHE else "django.contrib.sessions.backends.db"
# The labeling page shows "left in the queue" from a count at most this old (the queue page counts afresh).
CPRT_QUEUE_COUNT_TTL_S = env.int("CPRT_QUEUE_COUNT_TTL_S", default=30)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True

# django-axes: lock an account+IP after repeated failed logins.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_HOURS", default=0.25)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# How many proxies in front of Django append to X-Forwarded-For (docker-compose.yml: nginx, and the
# TLS proxy before it = 2). 0: no proxy, the socket address is the client (cprt_site.auth.client_ip).
CPRT_TRUSTED_PROXIES = env.int("CPRT_TRUSTED_PROXIES", default=0)
AXES_CLIENT_IP_CALLABLE = "cprt_site.auth.client_ip"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# The image collects them at build time into /app/staticfiles (deploy/Dockerfile sets STATIC_ROOT).
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(DATA_DIR / "staticfiles"))).resolve()
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
PRIVATE_IMAGE_ROOT = Path(env.str("PRIVATE_IMAGE_ROOT", default=str(DATA_DIR / "private-images"))).resolve()
# Finished dataset exports (zip files), also private: only admins download them, through a view.
CPRT_EXPORT_ROOT = Path(env.str("CPRT_EXPORT_ROOT", default=str(DATA_DIR / "exports"))).resolve()
# Behind nginx (docker-compose.yml), Django checks permissions and answers with X-Accel-Redirect;
# nginx then sends the bytes from an `internal` location (deploy/nginx.conf). Off: Django streams them.
CPRT_X_ACCEL_REDIRECT = env.bool("CPRT_X_ACCEL_REDIRECT", default=False)
# name -> folder; nginx maps /_protected/<name>/ to the same folder.
CPRT_PROTECTED_ROOTS = {"images": PRIVATE_IMAGE_ROOT, "exports": CPRT_EXPORT_ROOT}
CPRT_MAX_IMAGE_PIXELS = env.int("CPRT_MAX_IMAGE_PIXELS", default=40_000_000)
CPRT_MAX_IMAGE_BYTES = env.int("CPRT_MAX_IMAGE_BYTES", default=25 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=5 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# How many independent human labelings each image needs.
CPRT_LABELINGS_PER_IMAGE = env.int("CPRT_LABELINGS_PER_IMAGE", default=2)
# A draft with no answer, untouched this long, gives its slot back (beat task annotations.release_idle_drafts).
CPRT_DRAFT_IDLE_HOURS = env.float("CPRT_DRAFT_IDLE_HOURS", default=24.0)
# Draft autosaves by one user within this many seconds of each other share one history row (0: one per save).
CPRT_HISTORY_COALESCE_S = env.float("CPRT_HISTORY_COALESCE_S", default=60.0)

# Celery: filesystem broker under the data folder by default, redis:// in production.
# Redis delivers a message again when its task has not been acked after the visibility timeout (tasks
# ack late), so every task must end well before it: soft and hard time limits below it, checked here.
CPRT_BROKER_VISIBILITY_TIMEOUT_S = env.int("CPRT_BROKER_VISIBILITY_TIMEOUT_S", default=3600)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CPRT_TASK_SOFT_TIME_LIMIT_S", default=CPRT_BROKER_VISIBILITY_TIMEOUT_S * 3 // 4)
CELERY_TASK_TIME_LIMIT = env.int("CPRT_TASK_TIME_LIMIT_S", default=CPRT_BROKER_VISIBILITY_TIMEOUT_S * 5 // 6)
# A run's chunk is sized to take about this long at the provider's rate limit (inference/chunks.py).
CPRT_RUN_CHUNK_TARGET_S = env.float("CPRT_RUN_CHUNK_TARGET_S", default=min(600.0, CELERY_TASK_SOFT_TIME_LIMIT / 4))
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
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
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
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=_default_results)
if CELERY_RESULT_BACKEND.startswith("file://"):
    Path(CELERY_RESULT_BACKEND.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 24 * 3600

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

# Model providers: credentials only from the environment, never stored.
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
GEMINI_API_KEY = env.str("GEMINI_API_KEY", default="")
GEMINI_BASE_URL = env.str("GEMINI_BASE_URL", default="")
VLLM_BASE_URL = env.str("VLLM_BASE_URL", default="")
VLLM_API_KEY = env.str("VLLM_API_KEY", default="")
HF_TOKEN = env.str("HF_TOKEN", default="")
# A running export writes a heartbeat this often; beat marks one silent for CPRT_EXPORT_STALE_S failed (worker lost).
CPRT_EXPORT_HEARTBEAT_S = env.float("CPRT_EXPORT_HEARTBEAT_S", default=30.0)
CPRT_EXPORT_STALE_S = env.float("CPRT_EXPORT_STALE_S", default=300.0)
# Face anonymization jobs (annotations/faces): threads per job, heartbeat, silence after which a job is resumable.
CPRT_FACES_THREADS = env.int("CPRT_FACES_THREADS", default=2)
CPRT_FACES_HEARTBEAT_S = env.float("CPRT_FACES_HEARTBEAT_S", default=5.0)
CPRT_FACES_STALE_S = env.float("CPRT_FACES_STALE_S", default=120.0)
HF_ENDPOINT = env.str("HF_ENDPOINT", default="")  # another Hub (a mirror, the tests' fake); empty: huggingface.co


def _at_least(name: str, value, minimum):
    """A run knob below its minimum is a configuration error, said at start-up."""
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


# Runs and providers (read by inference; tests override them through Django's `settings`).
# Seconds one provider request may take before it counts as a (retryable) timeout.
CPRT_PROVIDER_TIMEOUT_S = _at_least("CPRT_PROVIDER_TIMEOUT_S", env.float("CPRT_PROVIDER_TIMEOUT_S", default=120.0), 0.05)
# Attempts per request (first try included) for retryable failures; backoff doubles from _S up to _MAX_S.
CPRT_PROVIDER_MAX_ATTEMPTS = _at_least("CPRT_PROVIDER_MAX_ATTEMPTS", env.int("CPRT_PROVIDER_MAX_ATTEMPTS", default=5), 1)
CPRT_PROVIDER_BACKOFF_S = _at_least("CPRT_PROVIDER_BACKOFF_S", env.float("CPRT_PROVIDER_BACKOFF_S", default=1.0), 0.0)
CPRT_PROVIDER_BACKOFF_MAX_S = _at_least("CPRT_PROVIDER_BACKOFF_MAX_S", env.float("CPRT_PROVIDER_BACKOFF_MAX_S", default=60.0), 0.0)
# Minimum images per chunk task (chunks hold up to 200 x the lane's concurrency, see inference.dispatch).
CPRT_RUN_CHUNK_SIZE = _at_least("CPRT_RUN_CHUNK_SIZE", env.int("CPRT_RUN_CHUNK_SIZE", default=50), 1)
# Most requests one chunk task keeps in flight. A run with a higher concurrency is split into
# ceil(concurrency / this) lanes (inference/leases.py) that run on separate worker processes, because one
# Python process tops out at ~200 requests/s of SDK work, and loses efficiency to GIL contention well
# before that (measured: 0.93 of ideal at 16 in flight, 0.86 at 32).
CPRT_RUN_LANE_CONCURRENCY = _at_least("CPRT_RUN_LANE_CONCURRENCY", env.int("CPRT_RUN_LANE_CONCURRENCY", default=16), 1)
# A lane whose worker has not renewed its lease for CPRT_RUN_STALE_S is re-dispatched by the reconciler;
# a lane no worker has claimed yet (queued work) never is.
CPRT_RUN_STALE_S = _at_least("CPRT_RUN_STALE_S", env.float("CPRT_RUN_STALE_S", default=180.0), 1.0)
CPRT_RUN_HEARTBEAT_S = _at_least("CPRT_RUN_HEARTBEAT_S", env.float("CPRT_RUN_HEARTBEAT_S", default=2.0), 0.05)
CPRT_RECONCILE_EVERY_S = _at_least("CPRT_RECONCILE_EVERY_S", env.float("CPRT_RECONCILE_EVERY_S", default=60.0), 1.0)
# Requests per minute allowed for a provider, shared by every worker; 0 means no limit.
OPENAI_MAX_RPM = env.int("OPENAI_MAX_RPM", default=500)
GEMINI_MAX_RPM = env.int("GEMINI_MAX_RPM", default=300)
VLLM_MAX_RPM = env.int("VLLM_MAX_RPM", default=0)
# Pixel budget for images sent to vLLM (downscaled client-side, aspect ratio kept).
VLLM_MAX_PIXELS = _at_least("VLLM_MAX_PIXELS", env.int("VLLM_MAX_PIXELS", default=1_003_520), 1024)
# Redis for the shared rate limiter; empty: the broker when it is Redis, else a SQLite file (one host).
CPRT_RATE_LIMIT_URL = env.str("CPRT_RATE_LIMIT_URL", default="")
# Batch runs (inference/batch): per-file limits (the providers' own caps apply too), Gemini's inline
# size, the poll interval, the providers' completion window, when a dead poller's ingest claim lapses.
CPRT_BATCH_MAX_REQUESTS = _at_least("CPRT_BATCH_MAX_REQUESTS", env.int("CPRT_BATCH_MAX_REQUESTS", default=50_000), 1)
CPRT_BATCH_MAX_BYTES = _at_least("CPRT_BATCH_MAX_BYTES", env.int("CPRT_BATCH_MAX_BYTES", default=200 * 1024 * 1024), 1024)
CPRT_BATCH_GEMINI_INLINE_MAX_BYTES = _at_least("CPRT_BATCH_GEMINI_INLINE_MAX_BYTES", env.int("CPRT_BATCH_GEMINI_INLINE_MAX_BYTES", default=20 * 1024 * 1024), 0)
CPRT_BATCH_POLL_S = _at_least("CPRT_BATCH_POLL_S", env.float("CPRT_BATCH_POLL_S", default=60.0), 1.0)
CPRT_BATCH_WINDOW_H = _at_least("CPRT_BATCH_WINDOW_H", env.float("CPRT_BATCH_WINDOW_H", default=24.0), 0.0)
CPRT_BATCH_INGEST_STALE_S = _at_least("CPRT_BATCH_INGEST_STALE_S", env.float("CPRT_BATCH_INGEST_STALE_S", default=600.0), 1.0)
# vLLM batch runs: "offline" (batch_export / run_batch / batch_ingest on a GPU machine) or "api".
VLLM_BATCH_MODE = env.str("VLLM_BATCH_MODE", default="offline")

# Periodic jobs (celery beat): the apps own the tasks, the project owns the schedule.
CELERY_BEAT_SCHEDULE = {
    "annotations.release_idle_drafts": {"task": "annotations.release_idle_drafts", "schedule": 3600.0, "options": {"queue": "default"}},
    "inference.reconcile_runs": {"task": "inference.reconcile_runs", "schedule": CPRT_RECONCILE_EVERY_S, "options": {"queue": "default"}},
    "inference.poll_batches": {"task": "inference.poll_batches", "schedule": CPRT_BATCH_POLL_S, "options": {"queue": "default"}},
    "scoring.reconcile_exports": {"task": "scoring.reconcile_exports", "schedule": 60.0, "options": {"queue": "default"}},
    "annotations.reconcile_face_jobs": {"task": "annotations.reconcile_face_jobs", "schedule": 60.0, "options": {"queue": "default"}},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
# Content Security Policy (django-csp): no inline or third-party script anywhere. Inline style
# *attributes* are allowed (progress-bar widths, SVG plots); style sheets come only from us.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Log records are scrubbed of configured secrets (messages and tracebacks) as they are created, and
# again by the handler filter (core.secrets.scrub_filter), in every process that configures logging.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"scrub_secrets": {"()": "core.secrets.scrub_filter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["scrub_secrets"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"httpx": {"level": "WARNING"}, "httpx2": {"level": "WARNING"}},
}
