"""Browser journey helpers: where screenshots go, logging in through the login form."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def log_in(page, base, username):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/")
