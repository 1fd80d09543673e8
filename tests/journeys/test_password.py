"""The password page in Debian's Chromium: a change revokes the API token; wrong current passwords
lock the page like the login. Skipped without /usr/bin/chromium unless CPRT_REQUIRE_BROWSER=1."""
from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from tests.conftest import PASSWORD, make_user
from tests.support.browser import ARTIFACTS, log_in

NEW_PASSWORD = "a-new-long-passphrase-42"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def submit_password_form(page, base, old, new=NEW_PASSWORD):
    page.goto(f"{base}/account/password")
    page.fill("input[name=old_password]", old)
    page.fill("input[name=new_password1]", new)
    page.fill("input[name=new_password2]", new)
    with page.expect_navigation():
        page.get_by_role("button", name="Change password").click()  # not the header's "Log out" button


def test_changing_the_password_on_the_page_revokes_the_api_token(browser, live_server):
    user = make_user("pw-browser", "reviewer")
    Token.objects.create(user=user)
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    log_in(page, live_server.url, "pw-browser")
    submit_password_form(page, live_server.url, PASSWORD)
    assert page.url.endswith("/account/preferences") or "Password changed." in page.inner_text("body")
    page.screenshot(path=str(ARTIFACTS / "password-1-changed.png"), full_page=True)
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert not Token.objects.filter(user=user).exists()


def test_wrong_current_passwords_lock_the_page(browser, live_server, settings):
    user = make_user("pw-locked", "reviewer")
    page = browser.new_page(viewport={"width": 1000, "height": 800})
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
