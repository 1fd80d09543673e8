"""Fixtures of the cross-cutting suites."""
import pytest

from tests.support.permission_cases import build_world


@pytest.fixture
def world(db):
    """Every persona, and every case module's objects (tests/support/permission_cases)."""
    return build_world()
