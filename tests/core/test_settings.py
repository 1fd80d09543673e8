"""Settings read from the environment: production refuses weak configuration, defaults are embedded.

Each case starts a fresh Python process, because settings are read once at import time.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRONG_SECRET = "k3Jx9-QvR2mZ7pL0wYt4NbA8sEe1HdUcGf6iVo5_Tq2Wz7Xr4Ky1M"  # 53 random-looking characters, test only

# Print what the tests look at, as JSON, after a full django.setup().
PROBE = """
import json, django
django.setup()
from django.conf import settings
print(json.dumps({
    "debug": settings.DEBUG,
    "engine": settings.DATABASES["default"]["ENGINE"],
    "db_name": str(settings.DATABASES["default"]["NAME"]),
    "db_host": settings.DATABASES["default"].get("HOST", ""),
    "broker": settings.CELERY_BROKER_URL,
    "broker_options": settings.CELERY_BROKER_TRANSPORT_OPTIONS,
    "results": settings.CELERY_RESULT_BACKEND,
    "data_dir": str(settings.DATA_DIR),
    "allowed_hosts": settings.ALLOWED_HOSTS,
}))
"""

# Variables the tests control; anything inherited from the caller (CI sets some) is removed first.
CONTROLLED = (
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
    "CELERY_TASK_ALWAYS_EAGER", "PRIVATE_IMAGE_ROOT", "PYTEST_XDIST_WORKER", "POSTGRES_PASSWORD", "STATIC_ROOT",
)
EXAMPLE = {
    match.group(1): match.group(2)
    for match in re.finditer(r"^([A-Z][A-Z0-9_]*)=(.*)$", (ROOT / ".env.example").read_text(), re.MULTILINE)
}


def start_django(tmp_path, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    env.update(DJANGO_SETTINGS_MODULE="cprt_site.settings", CPRT_DATA_DIR=str(tmp_path / "data"))
    env.update(variables)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def started(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def refused(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode != 0, f"expected Django to refuse to start, it printed: {result.stdout}"
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr, result.stderr[-3000:]


def test_production_without_secret_key_refuses(tmp_path):
    refused(start_django(tmp_path, DEBUG="0", ALLOWED_HOSTS="cprt.example.org"), "set SECRET_KEY")


@pytest.mark.parametrize(
    "secret, reason",
    [
        ("short-secret", "shorter than 50 characters"),
        ("k3Jx9-QvR2mZ7pL0wYt4NbA8sEe1HdUcGf6iVo5_", "shorter than 50 characters"),  # 40: passed the old 32
        ("dev-insecure-secret-key-only-for-local-debug-use", "is the development key"),
        ("change-me-to-a-random-string-of-at-least-32-characters-and-then-some", 'contains "change-me"'),
        ("abababababababababababababababababababababababababababab", "fewer than 5 distinct characters"),
    ],
    ids=["short", "40-characters", "dev-default", "change-me", "four-distinct"],
)
def test_production_with_weak_secret_key_refuses(tmp_path, secret, reason):
    refused(start_django(tmp_path, DEBUG="0", SECRET_KEY=secret, ALLOWED_HOSTS="cprt.example.org"), reason)


def test_the_example_env_file_does_not_start_production(tmp_path):
    # A copied .env.example must not give production a known key: its SECRET_KEY is blank or refused.
    assert EXAMPLE["DEBUG"] == "0"
    variables = {k: v for k, v in EXAMPLE.items() if k in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "POSTGRES_PASSWORD")}
    refused(start_django(tmp_path, **variables), "SECRET_KEY")
    assert not EXAMPLE.get("POSTGRES_PASSWORD"), "compose passes the database password as a secret file, never through .env"


def test_the_database_password_can_come_from_a_file(tmp_path):
    (tmp_path / "weak").write_text("change-me\n")
    refused(start_django(tmp_path, DEBUG="0", SECRET_KEY=STRONG_SECRET, ALLOWED_HOSTS="h", DATABASE_URL="postgres://cprt@db:5432/cprt",
                         POSTGRES_PASSWORD_FILE=str(tmp_path / "weak")), 'POSTGRES_PASSWORD_FILE contains "change-me"')


@pytest.mark.parametrize(
    "variables, reason",
    [
        ({"POSTGRES_PASSWORD": "change-me"}, 'POSTGRES_PASSWORD contains "change-me"'),
        ({"POSTGRES_PASSWORD": "short-pw"}, "POSTGRES_PASSWORD is shorter than 16 characters"),
        ({"DATABASE_URL": "postgres://cprt:change-me@db:5432/cprt"}, 'the password in DATABASE_URL contains "change-me"'),
        ({"DATABASE_URL": "postgres://cprt:aaaaaaaaaaaaaaaaaaaa@db:5432/cprt"}, "fewer than 5 distinct characters"),
    ],
    ids=["postgres-change-me", "postgres-short", "url-change-me", "url-repeated"],
)
def test_production_with_placeholder_database_password_refuses(tmp_path, variables, reason):
    refused(start_django(tmp_path, DEBUG="0", SECRET_KEY=STRONG_SECRET, ALLOWED_HOSTS="cprt.example.org", **variables), reason)


def test_production_with_a_real_database_password_starts(tmp_path):
    password = "Zq8-vN3pLx7Rt2Wm"
    url = f"postgres://cprt:{password}@db:5432/cprt"
    info = started(start_django(tmp_path, DEBUG="0", SECRET_KEY=STRONG_SECRET, ALLOWED_HOSTS="h", POSTGRES_PASSWORD=password, DATABASE_URL=url))
    assert info["engine"] == "django.db.backends.postgresql"


def test_production_without_allowed_hosts_refuses(tmp_path):
    refused(start_django(tmp_path, DEBUG="0", SECRET_KEY=STRONG_SECRET), "set ALLOWED_HOSTS")


def test_production_with_everything_set_starts(tmp_path):
    info = started(start_django(tmp_path, DEBUG="0", SECRET_KEY=STRONG_SECRET, ALLOWED_HOSTS="cprt.example.org,www.cprt.example.org"))
    assert info["debug"] is False
    assert info["allowed_hosts"] == ["cprt.example.org", "www.cprt.example.org"]


def test_database_url_selects_postgresql(tmp_path):
    # Settings only parse the URL; nothing connects, so no server is needed for this check.
    info = started(start_django(tmp_path, DATABASE_URL="postgres://cprt:pw@db.internal:5432/cprt"))
    assert info["engine"] == "django.db.backends.postgresql"
    assert info["db_name"] == "cprt"
    assert info["db_host"] == "db.internal"


def test_defaults_are_sqlite_and_a_filesystem_broker_under_the_data_dir(tmp_path):
    info = started(start_django(tmp_path))
    data = (tmp_path / "data").resolve()
    assert info["data_dir"] == str(data)
    assert info["engine"] == "django.db.backends.sqlite3"
    assert Path(info["db_name"]).parent == data
    assert info["broker"] == "filesystem://"
    folders = info["broker_options"]
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert Path(folders[key]).is_relative_to(data), (key, folders[key])
        assert Path(folders[key]).is_dir()
    assert info["results"] == f"file://{data / 'celery-results'}"


def test_redis_broker_url_is_used_as_given(tmp_path):
    info = started(start_django(tmp_path, CELERY_BROKER_URL="redis://cache.internal:6379/3"))
    assert info["broker"] == "redis://cache.internal:6379/3"
    assert info["results"] == "redis://cache.internal:6379/3"
    assert not (tmp_path / "data" / "broker").exists()
