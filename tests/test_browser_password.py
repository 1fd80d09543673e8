"""The password page in Debian's Chromium: a change revokes the API token; wrong current passwords
lock the page like the login. Skipped without /usr/bin/chromium unless CPRT_REQUIRE_BROWSER=1."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls in these tests are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

from rest_framework.authtoken.models import Token  # noqa: E402

from tests.conftest import PASSWORD, make_user  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
NEW_PASSWORD = "a-new-long-passphrase-42"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@contextmanager
def chromium_page():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CPRT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CPRT_REQUIRE_BROWSER=1 but {CHROMIUM} is missing")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield browser.new_page(viewport={"width": 1000, "height": 800})
        finally:
            browser.close()


def log_in(page, base, username):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/")


def submit_password_form(page, base, old, new=NEW_PASSWORD):
    page.goto(f"{base}/account/password")
    page.fill("input[name=old_password]", old)
    page.fill("input[name=new_password1]", new)
    page.fill("input[name=new_password2]", new)
    with page.expect_navigation():
        page.get_by_role("button", name="Change password").click()  # not the header's "Log out" button


def test_changing_the_password_on_the_page_revokes_the_api_token(live_server):
    user = make_user("pw-browser", "reviewer")
    Token.objects.create(user=user)
    with chromium_page() as page:
        log_in(page, live_server.url, "pw-browser")
        submit_password_form(page, live_server.url, PASSWORD)
        assert page.url.endswith("/account/preferences") or "Password changed." in page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / "password-1-changed.png"), full_page=True)
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert not Token.objects.filter(user=user).exists()


def test_wrong_current_passwords_lock_the_page(live_server, settings):
    user = make_user("pw-locked", "reviewer")
    with chromium_page() as page:
        log_in(page, live_server.url, "pw-locked")
        for attempt in range(settings.AXES_FAILURE_LIMIT - 1):
            submit_password_form(page, live_server.url, f"wrong-{attempt}")
            assert "incorrect" in page.inner_text("body")
        submit_password_form(page, live_server.url, "wrong-last")
        page.screenshot(path=str(ARTIFACTS / "password-2-locked.png"), full_page=True)
        assert "locked" in page.inner_text("body").lower()
        submit_password_form(page, live_server.url, PASSWORD)  # even the right one, while locked
        assert "locked" in page.inner_text("body").lower()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
