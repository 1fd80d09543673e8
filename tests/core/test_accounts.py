"""API tokens die with a password change and are refused during a lockout; the password page is
throttled like the login (a wrong current password counts as a failed login)."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-new-long-passphrase-42"
IP = "10.0.0.9"


def api_status(token: str) -> int:
    client = APIClient(REMOTE_ADDR=IP)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/images/").status_code


def change_password(client, old: str, new: str = NEW_PASSWORD):
    return client.post(
        reverse("annotations:password_change"),
        {"old_password": old, "new_password1": new, "new_password2": new},
        REMOTE_ADDR=IP,
    )


def test_password_change_on_the_page_revokes_api_tokens(client_as, reviewer_a):
    token = Token.objects.create(user=reviewer_a).key
    assert api_status(token) == 200
    response = change_password(client_as(reviewer_a), PASSWORD)
    assert response.status_code == 302
    assert api_status(token) == 401
    assert not Token.objects.filter(user=reviewer_a).exists()


def test_any_password_change_revokes_tokens_but_other_saves_do_not(reviewer_a, reviewer_b):
    token = Token.objects.create(user=reviewer_a).key
    other = Token.objects.create(user=reviewer_b).key
    reviewer_a.first_name = "Ann"
    reviewer_a.save()
    reviewer_a.save(update_fields=["last_login"])
    assert api_status(token) == 200
    reviewer_a.set_password(NEW_PASSWORD)
    reviewer_a.save()
    assert api_status(token) == 401
    assert api_status(other) == 200, "another account's token is untouched"


def test_the_changepassword_command_revokes_tokens(reviewer_a, monkeypatch):
    token = Token.objects.create(user=reviewer_a).key
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: NEW_PASSWORD)
    call_command("changepassword", "reviewer_a", stdout=None)
    assert api_status(token) == 401


def test_a_locked_out_account_cannot_use_its_token(client, reviewer_a, settings):
    token = Token.objects.create(user=reviewer_a).key
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": "reviewer_a", "password": "wrong-password"}, REMOTE_ADDR="10.9.9.9")
    response = APIClient(REMOTE_ADDR=IP).get("/api/images/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 401
    assert "locked out" in response.json()["detail"]


def test_wrong_current_passwords_lock_the_password_page(client_as, reviewer_a, settings):
    client = client_as(reviewer_a)
    for attempt in range(1, settings.AXES_FAILURE_LIMIT):
        response = change_password(client, f"wrong-{attempt}")
        assert response.status_code == 400 and b"incorrect" in response.content
    assert change_password(client, "wrong-last").status_code in (403, 429)  # the limit locks
    # Locked: even the right current password is refused and the password is unchanged.
    assert change_password(client, PASSWORD).status_code in (403, 429)
    reviewer_a.refresh_from_db()
    assert reviewer_a.check_password(PASSWORD)
    # And the login form is locked for the same account and address, as after failed logins.
    client.logout()
    login = client.post(reverse("login"), {"username": "reviewer_a", "password": PASSWORD}, REMOTE_ADDR=IP)
    assert login.status_code in (403, 429)


def test_a_few_wrong_current_passwords_do_not_lock(client_as, reviewer_a, settings):
    client = client_as(reviewer_a)
    for attempt in range(settings.AXES_FAILURE_LIMIT - 1):
        change_password(client, f"wrong-{attempt}")
    assert change_password(client, PASSWORD).status_code == 302
    reviewer_a.refresh_from_db()
    assert reviewer_a.check_password(NEW_PASSWORD)
