"""create_reviewer USERNAME --role reviewer|adjudicator|admin [--email E]: invite one person.

Accounts are invite-only: an admin runs this, passes the printed one-time password to the person
over a private channel, and the person changes it under Preferences -> Change your password.
"""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email
from django.db import transaction

from annotations.models import Annotator

from core.models import Profile
from core.roles import ROLE_ADMIN, ROLES
from core.audit import audit


def _shown(value: str) -> str:
    # Echo what was typed, but not all of a 10,000-character argument.
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Command(BaseCommand):
    help = "Create a user with a role (reviewer, adjudicator, admin) and print a one-time generated password."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, role: str, email: str, **options):
        User = get_user_model()
        username = username.strip()
        try:
            User._meta.get_field("username").run_validators(username)
        except ValidationError as exc:
            raise CommandError(f"Invalid user name {_shown(username)}: {' '.join(exc.messages)}") from None
        if not username:
            raise CommandError("The user name must not be empty.")
        if email:
            try:
                validate_email(email)
                # The field's own limits too (254 characters): validate_email alone lets up to 320 through.
                User._meta.get_field("email").run_validators(email)
            except ValidationError as exc:
                raise CommandError(f"Invalid e-mail address {_shown(email)}: {' '.join(exc.messages)}") from None
        if User.objects.filter(username__iexact=username).exists():
            raise CommandError(f"A user named {username!r} already exists; nothing was changed.")
        password = secrets.token_urlsafe(15)
        validate_password(password)
        with transaction.atomic():
            user = User.objects.create_user(
                username=username,
                email=email,
                password=password,
                # Admins manage accounts, batches and unsuitable images in Django's admin.
                is_staff=role == ROLE_ADMIN,
                is_superuser=role == ROLE_ADMIN,
            )
            Profile.objects.create(user=user, role=role)
            Annotator.for_user(user)
            audit(None, "account.create", user, username=username, role=role)
        self.stdout.write(f"Created {role} {username!r}.")
        self.stdout.write(f"One-time password (shown only now): {password}")
        self.stdout.write("Ask them to change it after logging in (Preferences -> Change your password).")
