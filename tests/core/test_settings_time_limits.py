"""Task time limits stay below the broker's visibility timeout, or the settings refuse to load.

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
print(json.dumps([settings.CELERY_TASK_SOFT_TIME_LIMIT, settings.CELERY_TASK_TIME_LIMIT,
                  settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout"), settings.CPRT_RUN_CHUNK_TARGET_S]))
"""
NAMES = ("CPRT_BROKER_VISIBILITY_TIMEOUT_S", "CPRT_TASK_SOFT_TIME_LIMIT_S", "CPRT_TASK_TIME_LIMIT_S", "CPRT_RUN_CHUNK_TARGET_S")


def load(tmp_path, **values):
    env = {k: v for k, v in os.environ.items() if k not in NAMES}
    env.update({"DJANGO_SETTINGS_MODULE": "cprt_site.settings", "CPRT_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT),
                "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15", "DEBUG": "1"})
    env.update({k: str(v) for k, v in values.items()})
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_defaults_keep_every_task_inside_the_visibility_timeout(tmp_path):
    done = load(tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2700, 3000, 3600, 600.0]
    done = load(tmp_path, CPRT_BROKER_VISIBILITY_TIMEOUT_S=600)  # the limits follow a shorter timeout
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [450, 500, 600, 112.5]


@pytest.mark.parametrize("values", [
    {"CPRT_TASK_TIME_LIMIT_S": 3600},  # hard limit at the visibility timeout
    {"CPRT_TASK_SOFT_TIME_LIMIT_S": 3000, "CPRT_TASK_TIME_LIMIT_S": 3000},
    {"CPRT_BROKER_VISIBILITY_TIMEOUT_S": 600, "CPRT_TASK_TIME_LIMIT_S": 900},
    {"CPRT_RUN_CHUNK_TARGET_S": 2000},  # more than half the soft limit
])
def test_limits_out_of_order_refuse_to_start(tmp_path, values):
    done = load(tmp_path, **values)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and ("visibility" in done.stderr.lower() or "CPRT_RUN_CHUNK_TARGET_S" in done.stderr)
