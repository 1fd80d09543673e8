"""Shared fixtures of the browser tests and journeys (Playwright on Debian's Chromium, against pytest-django's live server).

- `browser`: a Chromium per test (each journey is one test per module; its steps share the logged-in pages).
  Skipped when /usr/bin/chromium or Playwright is missing, unless CPRT_REQUIRE_BROWSER=1 (CI), which makes the skip a failure.
- `journey`: logs personas in through the login form once and keeps their pages (`journey.page_for(username)`),
  watches every page it opens and fails the test at the end if any page logged a console error, raised an
  uncaught exception, violated the Content Security Policy or got a 4xx/5xx response (for the page or any
  resource it loaded) that the test did not announce with `journey.expect_status(...)`.
  `journey.visit(page, path, name)` opens a page, checks its status and writes a full-page screenshot at
  1280 px to test-artifacts/journeys/<name>.png; `journey.shot(page, name, docs="x")` with
  CPRT_DOCS_SCREENSHOTS=1 also refreshes the README's docs/screenshots/x.png.

Other engineers' browser tests can reuse these fixtures by living in this folder.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls in these tests are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

from tests.conftest import PASSWORD  # noqa: E402
from tests.support.browser import ARTIFACTS as ALL_ARTIFACTS  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ALL_ARTIFACTS / "journeys"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WIDTH, HEIGHT = 1280, 900
# How many rows the top bar's navigation links take (they must fit one row at WIDTH, for every role).
NAV_ROWS = "() => new Set([...document.querySelectorAll('.nav a')].map(a => Math.round(a.getBoundingClientRect().top))).size"
# Records CSP violations in the page (Chromium also logs them as console errors; this catches report-only ones too).
CSP_PROBE = """
window.__cprtCsp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cprtCsp.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline"));
});
"""


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
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Journey:
    def __init__(self, browser, base_url: str):
        self.browser = browser
        self.base = base_url
        self.problems: list[str] = []
        self.allowed: set[int] = set()
        self.pages: dict[str, object] = {}
        self.contexts: list = []
        self.visited: list[str] = []

    # --- watching -------------------------------------------------------------------------------------

    def watch(self, page):
        page.on("console", lambda msg: self._console(page, msg))
        page.on("pageerror", lambda exc: self.problems.append(f"{page.url}: uncaught exception: {exc}"))
        page.on("response", lambda response: self._response(response))
        return page

    def _console(self, page, msg):
        if msg.type != "error":
            return
        text = msg.text
        if "Failed to load resource" in text and self.allowed:
            status = re.search(r"status of (\d{3})", text)
            if status and int(status.group(1)) in self.allowed:
                return
        self.problems.append(f"{page.url}: console error: {text}")

    def _response(self, response):
        if response.status >= 400 and response.status not in self.allowed:
            self.problems.append(f"HTTP {response.status} for {response.request.method} {response.url}")

    @contextmanager
    def expect_status(self, *statuses: int):
        """Within the block, these statuses are what the test wants (a refused form), not a problem."""
        before = set(self.allowed)
        self.allowed |= set(statuses)
        try:
            yield
        finally:
            self.allowed = before

    def check(self, page):
        """CSP violations recorded in the page so far, and every problem seen until now, fail here."""
        try:
            csp = page.evaluate("window.__cprtCsp || []")
        except Exception:  # the page is navigating; its violations were logged to the console as well
            csp = []
        self.problems += [f"{page.url}: CSP violation: {v}" for v in csp]
        try:
            rows = page.evaluate(NAV_ROWS)
        except Exception:  # navigating, as above
            rows = 0
        if rows > 1 and page.viewport_size["width"] >= WIDTH:
            self.problems.append(f"{page.url}: the top bar's links wrap onto {rows} rows at {page.viewport_size['width']} px")
        assert not self.problems, "\n".join(self.problems)

    # --- pages ----------------------------------------------------------------------------------------

    def new_page(self, width: int = WIDTH, height: int = HEIGHT, context=None):
        if context is None:
            context = self.browser.new_context(viewport={"width": width, "height": height})
            context.add_init_script(CSP_PROBE)
            context.set_default_timeout(30_000)  # the shared CI machine can be slow; a real hang still fails
            self.contexts.append(context)
        return self.watch(context.new_page())

    def log_in(self, username: str, password: str = PASSWORD):
        """A fresh context logged in through the login form (typed, then Enter); returns its page."""
        page = self.new_page()
        self.visit(page, "/accounts/login/", f"login-{username}", shot=not self.visited)
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert "/accounts/login/" not in page.url, f"login as {username} failed: {page.inner_text('main')[:300]}"
        self.check(page)
        return page

    def page_for(self, username: str):
        """The logged-in page of `username`, shared by every step of the module's journeys."""
        if username not in self.pages:
            self.pages[username] = self.log_in(username)
        return self.pages[username]

    def visit(self, page, path: str, name: str | None = None, status: int = 200, shot: bool = True):
        with self.expect_status(status) if status >= 400 else _nothing():
            response = page.goto(self.base + path if path.startswith("/") else path)
            page.wait_for_load_state("load")
        assert response is not None and response.status == status, (
            f"{path}: HTTP {response.status if response else None}, expected {status}: {page.inner_text('body')[:400]}")
        self.visited.append(path)
        if shot and name:
            self.shot(page, name)
        self.check(page)
        return response

    def shot(self, page, name: str, docs: str | None = None):
        """A full-page screenshot in test-artifacts/journeys/. With `docs` and CPRT_DOCS_SCREENSHOTS=1, also
        the visible part (1280 x 900) as docs/screenshots/<docs>.png: the README's pictures, kept current."""
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        if docs and os.environ.get("CPRT_DOCS_SCREENSHOTS") == "1":
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(DOCS_SCREENSHOTS / f"{docs}.png"), full_page=False)

    def close(self):
        for context in self.contexts:
            context.close()


@contextmanager
def _nothing():
    yield


@pytest.fixture
def journey(browser, live_server):
    j = Journey(browser, live_server.url)
    try:
        yield j
        for page in list(j.pages.values()):
            j.check(page)
        assert not j.problems, "\n".join(j.problems)
    finally:
        j.close()
