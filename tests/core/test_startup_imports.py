"""Start-up imports no heavy library: scikit-learn, scipy, datasets, pandas and the provider SDKs are
imported where they are used, so `django.setup()`, `manage.py check` and a web worker start fast.

A fresh Python process each time: the test process has imported everything already.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sklearn", "scipy", "datasets", "pandas", "huggingface_hub", "openai", "google.genai")

PROBE = """
import json, sys, django
django.setup()
if sys.argv[1] == "urls":  # what `manage.py check` and the first request load: every view module
    from django.urls import get_resolver
    get_resolver().url_patterns
print(json.dumps(sorted(m for m in sys.modules if m in HEAVY)))
"""


def _heavy_modules_after(stage: str, tmp_path) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "CPRT_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}", stage], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("stage", ["setup", "urls"])
def test_start_up_imports_no_heavy_library(stage, tmp_path):
    assert _heavy_modules_after(stage, tmp_path) == []


def test_a_lazy_module_loads_on_first_use():
    from core.lazy import lazy_module

    name = "colorsys"  # a small stdlib module this process may not have imported
    sys.modules.pop(name, None)
    lazy = lazy_module(name)
    assert name not in sys.modules and "loaded" not in repr(lazy)
    assert lazy.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert name in sys.modules and "loaded" in repr(lazy)


WORKER_PROBE = """
import json, sys, django
django.setup()
from celery import signals
from cprt_site.celery import app
before = sorted(m for m in sys.modules if m in HEAVY)
signals.worker_init.send(sender=None)  # what a worker sends in its main process, before its pool forks
print(json.dumps([before, sorted(m for m in sys.modules if m in HEAVY)]))
"""


def test_a_worker_imports_the_provider_sdks_before_its_pool_forks(tmp_path):
    """A worker's pool processes inherit the provider SDKs instead of each importing them during its first run
    (issue 37: the first run after a start had the lowest throughput); nothing else imports them at start."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "CPRT_DATA_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", f"HEAVY = {HEAVY!r}\n{WORKER_PROBE}"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    before, after = json.loads(result.stdout.strip().splitlines()[-1])
    assert before == []
    assert {"openai", "google.genai"} <= set(after)
