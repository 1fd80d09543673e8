"""Keep configured secrets out of everything the app writes or shows.

`scrub()` replaces every configured secret (API keys, tokens, SECRET_KEY, the password of any URL in
the settings, every value the settings read with `secret()`, also from a `NAME_FILE` file) and
anything that looks like a bearer credential or a URL password with `[redacted]`,
in strings and in JSON-like values. It is applied where text leaves the process: the fields that hold
errors, raw provider replies and what models say (`ScrubbedTextField`, `ScrubbedJSONField`, on every
save, update and bulk insert: a model may echo a key inside a normal answer), log records
(`scrub_filter`: every record as it is created, and a handler filter),
Celery task results and failures (`cprt_site.celery.ScrubbingTask`), and base URLs shown on pages
(`display_url`).
"""
from __future__ import annotations

import logging
import os
import re
from functools import lru_cache
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.db import models
from django.dispatch import receiver

REDACTED = "[redacted]"
# Settings that hold a secret as a whole, and settings that are URLs whose password is a secret.
SECRET_SETTINGS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VLLM_API_KEY", "HF_TOKEN", "SECRET_KEY")
URL_SETTINGS = (
    "OPENAI_BASE_URL", "GEMINI_BASE_URL", "VLLM_BASE_URL", "HF_ENDPOINT", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CPRT_RATE_LIMIT_URL",
)
# Environment-only secrets that the SDKs read themselves (google-genai reads GOOGLE_API_KEY).
SECRET_ENVIRONMENT = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VLLM_API_KEY", "HF_TOKEN", "POSTGRES_PASSWORD")
# Shorter values are not treated as secrets: replacing "pw" everywhere would garble every message.
MIN_SECRET_LENGTH = 4

# Credentials that need no configuration to be recognised: a bearer token, the password of a URL.
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@\"'<>]*:)([^\s@/\"'<>]+)(@)")


def _url_password(url: str) -> str:
    try:
        return urlsplit(url).password or ""
    except ValueError:
        return ""


# The configured secrets, read once per value of the environment's secrets (`_secret_values`); settings
# changed at run time (override_settings, pytest-django's `settings`) empty it (`setting_changed`).
_VALUES: dict[tuple[str, ...], tuple[str, ...]] = {}


@receiver(setting_changed, dispatch_uid="core_secrets_setting_changed")
def _forget_secret_values(**kwargs) -> None:
    _VALUES.clear()


def _secret_values() -> tuple[str, ...]:
    """Every configured secret, longest first. Read from the settings once (issue 37: recomputed for each
    scrubbed value, it was a tenth of a run worker's CPU, six times per image), again when a setting
    changes or when one of the environment's secrets does (a value the SDKs read themselves)."""
    environment = tuple(os.environ.get(name, "") for name in SECRET_ENVIRONMENT)
    values = _VALUES.get(environment)
    if values is None:
        if len(_VALUES) >= 8:
            _VALUES.clear()
        values = _VALUES[environment] = _read_secret_values(environment)
    return values


def _read_secret_values(environment: tuple[str, ...]) -> tuple[str, ...]:
    values = {str(getattr(settings, name, "") or "") for name in SECRET_SETTINGS}
    values |= set(environment)
    # Every secret the settings read (cprt_site/env.py `secret()`), from NAME or from the file NAME_FILE.
    values |= {str(v or "") for v in getattr(settings, "CPRT_SECRETS_READ", {}).values()}
    values |= {_url_password(str(getattr(settings, name, "") or "")) for name in URL_SETTINGS}
    values |= {str(db.get("PASSWORD") or "") for db in settings.DATABASES.values()}
    values |= {_url_password(str(cache.get("LOCATION") or "")) for cache in settings.CACHES.values()}
    # Longest first, so that a secret containing another is replaced whole.
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True))


@lru_cache(maxsize=8)
def _pattern(values: tuple[str, ...]) -> re.Pattern | None:
    return re.compile("|".join(re.escape(v) for v in values)) if values else None


def scrub(value):
    """`value` with every configured secret, bearer token and URL password replaced by `[redacted]`;
    str, dict, list and tuple are walked (keys too), anything else is returned as it is."""
    return _scrub(value, _pattern(_secret_values()))


def _scrub(value, pattern: re.Pattern | None):
    if isinstance(value, str):
        if pattern is not None:
            value = pattern.sub(REDACTED, value)
        value = _URL_PASSWORD.sub(lambda m: m.group(0) if m.group(2) == REDACTED else m.group(1) + REDACTED + m.group(3), value)
        return _BEARER.sub(lambda m: m.group(1) + REDACTED, value)
    if isinstance(value, dict):
        return {_scrub(k, pattern): _scrub(v, pattern) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v, pattern) for v in value)
    return value


def display_url(url: str) -> str:
    """A URL as pages may show it: without user name and password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """Scrub a log record in place: its message (arguments merged in), traceback and stack text."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a broken format string is left for the handler to report
        return record
    record.msg, record.args = scrub(message), ()
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = scrub(record.exc_text)
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    return record


class ScrubFilter(logging.Filter):
    """A handler filter that scrubs each record before any formatter sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrub_record(record)
        return True


_factory_installed = False


def scrub_filter() -> ScrubFilter:
    """settings.LOGGING's filter factory. Besides the handler filter, it makes every log record of
    the process scrubbed when it is created (a record factory), so that handlers added later (Celery's
    in a worker, pytest's caplog) never see a secret either."""
    global _factory_installed
    if not _factory_installed:
        make_record = logging.getLogRecordFactory()

        def scrubbed_record(*args, **kwargs):
            return scrub_record(make_record(*args, **kwargs))

        logging.setLogRecordFactory(scrubbed_record)
        _factory_installed = True
    return ScrubFilter()


class ScrubbedTextField(models.TextField):
    """A TextField whose value is scrubbed on every write (save, update, bulk_create). Migrations see a
    plain TextField: storage is unchanged."""

    def get_prep_value(self, value):
        return super().get_prep_value(scrub(value))

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs


class ScrubbedJSONField(models.JSONField):
    """A JSONField whose value is scrubbed on every write. Migrations see a plain JSONField."""

    def get_prep_value(self, value):
        return super().get_prep_value(scrub(value))

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs
