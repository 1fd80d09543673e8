"""Every knob is typed and bounded (cprt_site/env.py): a nonsensical value stops start-up with a
message naming the variable, its value and what is allowed; secrets may come from NAME_FILE.

Each case starts a fresh Python process, because settings are read once at import time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
django.setup()
from django.conf import settings
from core.secrets import scrub
names = ["OPENAI_MAX_RPM", "VLLM_MAX_RPM", "VLLM_BATCH_MODE", "CPRT_LABELINGS_PER_IMAGE", "CPRT_RUN_HEARTBEAT_S",
         "CPRT_EXPORT_STALE_S", "DEBUG", "OPENAI_API_KEY", "HF_TOKEN", "SECRET_KEY", "LOG_LEVEL", "CPRT_RUN_CHUNK_SIZE"]
values = {name: getattr(settings, name) for name in names}
values["db_password"] = settings.DATABASES["default"].get("PASSWORD") or ""
values["db_name"] = str(settings.DATABASES["default"]["NAME"])
values["scrubbed"] = {name: scrub(f"echo {value}") for name, value in settings.CPRT_SECRETS_READ.items()}
print(json.dumps(values))
"""
STRONG_SECRET = "k3Jx9-QvR2mZ7pL0wYt4NbA8sEe1HdUcGf6iVo5_Tq2Wz7Xr4Ky1M"  # 53 random-looking characters, test only
# Variables these tests set; anything inherited from the caller (CI sets some) is removed first.
MINE = (
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
    "CELERY_TASK_ALWAYS_EAGER", "PRIVATE_IMAGE_ROOT", "PYTEST_XDIST_WORKER", "POSTGRES_PASSWORD", "STATIC_ROOT",
    "OPENAI_MAX_RPM", "GEMINI_MAX_RPM", "VLLM_MAX_RPM", "VLLM_BATCH_MODE", "CPRT_LABELINGS_PER_IMAGE", "LOG_LEVEL", "LOG_FORMAT",
    "CPRT_RUN_HEARTBEAT_S", "CPRT_RUN_STALE_S", "CPRT_EXPORT_HEARTBEAT_S", "CPRT_EXPORT_STALE_S", "CPRT_FACES_STALE_S",
    "OPENAI_API_KEY", "GEMINI_API_KEY", "VLLM_API_KEY", "HF_TOKEN", "CPRT_RUN_CHUNK_SIZE", "TIME_ZONE",
)


def start(tmp_path, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in MINE and not k.endswith("_FILE")}
    env.update(DJANGO_SETTINGS_MODULE="cprt_site.settings", CPRT_DATA_DIR=str(tmp_path / "data"))
    env.update(variables)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def started(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def refused(result: subprocess.CompletedProcess, *parts: str) -> str:
    assert result.returncode != 0, f"expected Django to refuse to start, it printed: {result.stdout}"
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: "), result.stderr[-3000:]
    for part in parts:
        assert part in last, last
    return last


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("OPENAI_MAX_RPM", "-10", "an integer from 0 to"),  # once: no limit
        ("GEMINI_MAX_RPM", "lots", "an integer from 0 to"),
        ("VLLM_BATCH_MODE", "nonsense", "one of offline, api"),  # once: offline
        ("CPRT_RUN_HEARTBEAT_S", "0", "seconds from 0.05"),
        ("CPRT_EXPORT_HEARTBEAT_S", "0", "seconds from 0.05"),
        ("CPRT_EXPORT_STALE_S", "-300", "seconds from 1.0"),
        ("CPRT_FACES_STALE_S", "-1", "seconds from 1.0"),
        ("CPRT_RUN_STALE_S", "soon", "seconds from 1.0"),
        ("CPRT_LABELINGS_PER_IMAGE", "0", "an integer from 1 to"),
        ("DEBUG", "maybe", "1, true, yes, on or 0, false, no, off"),
        ("CELERY_BROKER_URL", "redis:/oops", "a URL starting with"),
        ("LOG_FORMAT", "xml", "one of text, json"),
        ("TIME_ZONE", "Mars/Olympus", "an IANA time zone name"),
    ],
)
def test_a_nonsensical_value_stops_start_up_naming_the_variable(tmp_path, name, value, allowed):
    refused(start(tmp_path, **{name: value}), f"{name}={value!r} is not allowed", allowed)


def test_a_heartbeat_as_slow_as_the_stale_time_is_refused(tmp_path):
    refused(start(tmp_path, CPRT_RUN_HEARTBEAT_S="30", CPRT_RUN_STALE_S="30"), "CPRT_RUN_HEARTBEAT_S", "CPRT_RUN_STALE_S")


def test_documented_meanings_and_defaults_are_kept(tmp_path):
    defaults = started(start(tmp_path))
    assert (defaults["OPENAI_MAX_RPM"], defaults["VLLM_MAX_RPM"], defaults["VLLM_BATCH_MODE"]) == (500, 0, "offline")
    assert (defaults["CPRT_LABELINGS_PER_IMAGE"], defaults["CPRT_RUN_HEARTBEAT_S"], defaults["CPRT_EXPORT_STALE_S"]) == (2, 2.0, 300.0)
    assert defaults["LOG_LEVEL"] == "INFO" and defaults["DEBUG"] is True
    chosen = started(start(
        tmp_path, OPENAI_MAX_RPM="0", VLLM_BATCH_MODE="API", CPRT_EXPORT_STALE_S="5m", CPRT_RUN_HEARTBEAT_S="500ms",
        DEBUG="yes", LOG_LEVEL="warning", CPRT_RUN_CHUNK_SIZE="",  # blank: the default, as .env.example says
    ))
    assert chosen["OPENAI_MAX_RPM"] == 0, "0 still means no limit"
    assert chosen["VLLM_BATCH_MODE"] == "api" and chosen["CPRT_EXPORT_STALE_S"] == 300.0 and chosen["CPRT_RUN_HEARTBEAT_S"] == 0.5
    assert chosen["DEBUG"] is True and chosen["LOG_LEVEL"] == "WARNING" and chosen["CPRT_RUN_CHUNK_SIZE"] == 50


def test_a_secret_is_read_from_its_file_and_scrubbed(tmp_path):
    key, token = "sk-from-file-Zq8vN3pLx7Rt2Wm", "hf_fromfile_K3jx9QvR2mZ7"
    (tmp_path / "openai").write_text(f"  {key}\n")
    (tmp_path / "hf").write_text(token)
    info = started(start(tmp_path, OPENAI_API_KEY_FILE=str(tmp_path / "openai"), HF_TOKEN_FILE=str(tmp_path / "hf")))
    assert info["OPENAI_API_KEY"] == key and info["HF_TOKEN"] == token
    assert info["scrubbed"]["OPENAI_API_KEY"] == "echo [redacted]" and info["scrubbed"]["HF_TOKEN"] == "echo [redacted]"


def test_production_takes_its_secret_key_and_database_password_from_files(tmp_path):
    (tmp_path / "secret_key").write_text(STRONG_SECRET + "\n")
    (tmp_path / "pg").write_text("Zq8-vN3pLx7Rt2Wm\n")
    info = started(start(
        tmp_path, DEBUG="0", ALLOWED_HOSTS="cprt.example.org", SECRET_KEY_FILE=str(tmp_path / "secret_key"),
        POSTGRES_PASSWORD_FILE=str(tmp_path / "pg"), DATABASE_URL="postgres://cprt@db:5432/cprt",
    ))
    assert info["SECRET_KEY"] == STRONG_SECRET
    assert info["db_password"] == "Zq8-vN3pLx7Rt2Wm", "the URL without a password takes POSTGRES_PASSWORD_FILE's"
    assert info["scrubbed"]["POSTGRES_PASSWORD"] == "echo [redacted]" and info["scrubbed"]["SECRET_KEY"] == "echo [redacted]"
    # The production checks apply to a file's value too.
    (tmp_path / "weak").write_text("change-me")
    refused(start(tmp_path, DEBUG="0", ALLOWED_HOSTS="h", SECRET_KEY=STRONG_SECRET, POSTGRES_PASSWORD_FILE=str(tmp_path / "weak")),
            "POSTGRES_PASSWORD")


def test_database_url_from_a_file(tmp_path):
    (tmp_path / "db").write_text("postgres://cprt:Fh4-pQ9zLm2Xw7Ty@db.internal:5432/cprtdb\n")
    info = started(start(tmp_path, DATABASE_URL_FILE=str(tmp_path / "db")))
    assert info["db_name"] == "cprtdb" and info["db_password"] == "Fh4-pQ9zLm2Xw7Ty"
    assert info["scrubbed"]["DATABASE_URL password"] == "echo [redacted]"


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "SECRET_KEY", "DATABASE_URL", "POSTGRES_PASSWORD"])
def test_a_secret_and_its_file_both_set_are_refused(tmp_path, name):
    (tmp_path / "value").write_text("sqlite:////tmp/x.sqlite3" if name == "DATABASE_URL" else "a-value-from-the-file-123")
    value = "sqlite:////tmp/y.sqlite3" if name == "DATABASE_URL" else "a-value-from-the-env-456"
    last = refused(start(tmp_path, **{name: value, f"{name}_FILE": str(tmp_path / "value")}), f"{name} and {name}_FILE are both set")
    assert value not in last and "from-the-file" not in last, "the message never shows a secret"


def test_a_missing_or_empty_secret_file_is_refused(tmp_path):
    refused(start(tmp_path, GEMINI_API_KEY_FILE=str(tmp_path / "absent")), "GEMINI_API_KEY_FILE=", "cannot be read")
    (tmp_path / "empty").write_text("\n")
    refused(start(tmp_path, VLLM_API_KEY_FILE=str(tmp_path / "empty")), "VLLM_API_KEY_FILE=", "is an empty file")


def test_the_batch_conf_never_takes_an_unknown_vllm_mode_for_offline(settings):
    from django.core.exceptions import ImproperlyConfigured

    from inference.batch import conf

    settings.VLLM_BATCH_MODE = "nonsense"  # set after start-up (a test, a shell): refused where it is read
    with pytest.raises(ImproperlyConfigured, match="VLLM_BATCH_MODE='nonsense' is not allowed"):
        conf.vllm_batch_mode()
    settings.VLLM_BATCH_MODE = "api"
    assert conf.vllm_batch_mode() == "api"
