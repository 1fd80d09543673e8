"""With DEBUG off, a web process without the collected static files' manifest refuses to start with a
clear message (instead of answering every page with a 500); with the manifest it starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECRET = "k3Jx9-QvR2mZ7pL0wYt4NbA8sEe1HdUcGf6iVo5_Tq2Wz7Xr4Ky1M"
CONTROLLED = ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "STATIC_ROOT", "POSTGRES_PASSWORD", "DJANGO_ALLOW_ASYNC_UNSAFE")


def start_web(tmp_path, static_root: Path, debug: str = "0") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    env.update(DEBUG=debug, SECRET_KEY=SECRET, ALLOWED_HOSTS="cprt.example.org", CPRT_DATA_DIR=str(tmp_path / "data"),
               STATIC_ROOT=str(static_root), DJANGO_SETTINGS_MODULE="cprt_site.settings")
    return subprocess.run([sys.executable, "-c", "import cprt_site.wsgi; print('serving')"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_production_without_the_static_manifest_refuses_to_start(tmp_path):
    result = start_web(tmp_path, tmp_path / "static")
    assert result.returncode != 0 and "serving" not in result.stdout
    assert "ImproperlyConfigured" in result.stderr
    assert "staticfiles.json is missing" in result.stderr and "collectstatic" in result.stderr


def test_production_with_the_manifest_starts(tmp_path):
    static = tmp_path / "static"
    static.mkdir()
    (static / "staticfiles.json").write_text(json.dumps({"paths": {}, "version": "1.1", "hash": ""}))
    result = start_web(tmp_path, static)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "serving" in result.stdout


def test_debug_needs_no_manifest(tmp_path):
    result = start_web(tmp_path, tmp_path / "static", debug="1")
    assert result.returncode == 0, result.stderr[-2000:]
