"""Fixtures of the cross-cutting suites."""
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.support.permission_cases import build_world


@pytest.fixture
def world(db):
    """Every persona, and every case module's objects (tests/support/permission_cases)."""
    return build_world()


@pytest.fixture
def api():
    """api(user) -> an APIClient sending that user's token (None: anonymous)."""

    def make(user):
        client = APIClient()
        if user is not None:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make
