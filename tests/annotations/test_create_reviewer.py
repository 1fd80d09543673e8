"""create_reviewer: invite-only accounts with a role and a one-time generated password."""
from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from core.models import Profile
from core.roles import role_of

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("create_reviewer", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("role", ["reviewer", "adjudicator", "admin"])
def test_creates_user_profile_and_prints_a_working_password(role, client):
    output = run("alice", "--role", role, "--email", "alice@example.org")
    password = re.search(r"One-time password \(shown only now\): (\S+)", output).group(1)
    assert len(password) >= 16
    user = get_user_model().objects.get(username="alice")
    assert user.email == "alice@example.org" and user.check_password(password)
    assert Profile.objects.get(user=user).role == role and role_of(user) == role
    assert user.is_staff == (role == "admin") and user.is_superuser == (role == "admin")
    response = client.post("/accounts/login/", {"username": "alice", "password": password})
    assert response.status_code == 302 and response["Location"] == "/"


def test_each_password_is_new():
    first = re.search(r": (\S+)$", run("a1", "--role", "reviewer").splitlines()[1]).group(1)
    second = re.search(r": (\S+)$", run("a2", "--role", "reviewer").splitlines()[1]).group(1)
    assert first != second


def test_duplicate_is_refused_and_changes_nothing():
    run("bob", "--role", "reviewer")
    user = get_user_model().objects.get(username="bob")
    hashed = user.password
    for name in ("bob", "BOB"):
        with pytest.raises(CommandError, match="already exists; nothing was changed"):
            run(name, "--role", "admin")
    user.refresh_from_db()
    assert user.password == hashed and user.profile.role == "reviewer" and get_user_model().objects.count() == 1


@pytest.mark.parametrize(
    "args,message",
    [
        (("carol", "--role", "superhero"), "invalid choice: 'superhero'"),
        (("carol",), "the following arguments are required: --role"),
        (("carol", "--role", "reviewer", "--email", "not-an-email"), "Invalid e-mail address"),
        (("bad name!", "--role", "reviewer"), "Invalid user name"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run(*args)
    assert not get_user_model().objects.exists() and not Profile.objects.exists()
