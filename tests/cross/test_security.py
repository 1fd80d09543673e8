"""Production hardening: `check --deploy` is clean, and every page satisfies the Content Security Policy."""
from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path


from django.urls import reverse

from tests.support.permission_cases import all_cases

ROOT = Path(__file__).resolve().parents[2]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def _production_env(**extra) -> dict:
    # DJANGO_ALLOW_ASYNC_UNSAFE is set for the browser tests; the deploy check must not inherit it.
    dropped = {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="cprt.example.org")
    env.update(extra)
    return env


def test_check_deploy_is_clean_with_production_settings():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=_production_env(), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_every_page_sends_csp_and_has_no_inline_script(world, client):
    client.force_login(world["admin"])
    checked = 0
    for case in all_cases(world):
        if case.method != "get" or case.expected("admin") != 200 or case.query:
            continue
        response = client.get(reverse(case.url_name, kwargs=case.kwargs))
        assert response.status_code == 200
        policy = response.headers.get("Content-Security-Policy", "")
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        if response.headers.get("Content-Type", "").startswith("text/html"):
            html = response.content.decode()
            assert not INLINE_SCRIPT.search(html), f"inline <script> on {case.url_name}"
            assert not INLINE_HANDLER.search(html), f"inline event handler on {case.url_name}"
            checked += 1
    assert checked >= 1
