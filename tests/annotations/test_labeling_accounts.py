"""Accounts: login through the form, django-axes locks an account after 5 failed logins."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def login(client, username, password):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR="10.0.0.7")


def test_login_form_works(client, reviewer_a):
    response = login(client, "reviewer_a", PASSWORD)
    assert response.status_code == 302
    assert client.get(reverse("annotations:queue")).status_code == 200


def test_five_bad_logins_lock_the_account(client, reviewer_a):
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(4):
        response = login(client, "reviewer_a", "wrong-password")
        assert response.status_code == 200 and b"did not match" in response.content
    assert login(client, "reviewer_a", "wrong-password").status_code in (403, 429)  # the fifth locks
    # Locked: even the right password is refused, and no session is created.
    response = login(client, "reviewer_a", PASSWORD)
    assert response.status_code in (403, 429)
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("annotations:queue")).status_code == 302


def test_four_bad_logins_do_not_lock(client, reviewer_a):
    for _ in range(4):
        login(client, "reviewer_a", "wrong-password")
    assert login(client, "reviewer_a", PASSWORD).status_code == 302


def test_sessions_expire():
    assert settings.SESSION_COOKIE_AGE <= 12 * 3600 and settings.SESSION_EXPIRE_AT_BROWSER_CLOSE
