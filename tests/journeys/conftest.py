"""The `browser` fixture: Debian's Chromium through Playwright (sync API).

Skipped when /usr/bin/chromium is missing unless CPRT_REQUIRE_BROWSER=1, which turns the skip into a
failure (CI with a browser must not silently skip).
"""
from __future__ import annotations

import os

import pytest

from tests.support.browser import ARTIFACTS

# Playwright's sync API runs an event loop in this thread; the ORM calls in these tests are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture
def browser():
    reason = None
    if not os.path.exists(CHROMIUM):
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            reason = "the playwright package is not installed"
    if reason:
        if os.environ.get("CPRT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CPRT_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
