"""Shared fixtures: the five personas (admin, reviewer A, reviewer B, adjudicator, outsider) and data makers."""
from __future__ import annotations

import io
import os

import pytest
from django.contrib.auth import get_user_model
from PIL import Image as PILImage

from annotations.models import Annotator, Image, Label

from core.models import Profile
from annotations import label_version, taxonomy

PASSWORD = "correct-horse-battery-staple"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """`pytest -n N`: before each xdist worker starts (and imports the settings), give it its own data
    folder (filesystem broker, results, files, SQLite test database) and Redis database index, so that a
    Celery worker started by one xdist worker's test never takes another's tasks (tests/support/workers.py)."""
    from django.conf import settings

    from tests.support.workers import xdist_worker_env

    for spec in specs:
        try:
            spec.env.update(xdist_worker_env(spec.id, os.environ, settings.DATA_DIR))
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_collection_modifyitems(items):
    # A test that starts a worker process or a browser is slow by nature (tens of seconds).
    for item in items:
        if item.get_closest_marker("worker") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    # The default PBKDF2 hasher costs ~0.3 s per account on CI machines; tests make hundreds of accounts.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def clear_cache():
    # The default cache is per-process memory (CACHE_URL unset): one test's cached counts must not leak into the next.
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def make_user(username: str, role: str | None, superuser: bool = False):
    User = get_user_model()
    user = User.objects.create_user(username=username, password=PASSWORD, is_superuser=superuser, is_staff=superuser)
    if role is not None:
        Profile.objects.create(user=user, role=role, blur_images_by_default=True)
    return user


@pytest.fixture
def admin_user(db):
    return make_user("admin", "admin", superuser=True)


@pytest.fixture
def reviewer_a(db):
    return make_user("reviewer_a", "reviewer")


@pytest.fixture
def reviewer_b(db):
    return make_user("reviewer_b", "reviewer")


@pytest.fixture
def adjudicator(db):
    return make_user("adjudicator", "adjudicator")


@pytest.fixture
def outsider(db):
    """Logged in, but without any role: must see nothing."""
    return make_user("outsider", None)


@pytest.fixture
def personas(admin_user, reviewer_a, reviewer_b, adjudicator, outsider):
    return {"admin": admin_user, "reviewer_a": reviewer_a, "reviewer_b": reviewer_b, "adjudicator": adjudicator, "outsider": outsider}


@pytest.fixture
def client_as(client):
    """client_as(user) -> a test client logged in as that user (None: anonymous)."""

    def login(user):
        client.logout()
        if user is not None:
            client.force_login(user)
        return client

    return login


def with_submission_token(data: dict) -> dict:
    """A launch form's fields as the page posts them: with a fresh one-time submission token (core.idempotency)."""
    import secrets

    from core.idempotency import SUBMISSION_FIELD

    return {**data, SUBMISSION_FIELD: secrets.token_urlsafe(24)}


def png_bytes(width: int = 32, height: int = 24, color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (width, height), color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def make_image(db):
    """make_image(vispr_id, split='test', with_file=True) -> Image with cleaned stored bytes."""
    from annotations.images import attach, clean_image

    def make(vispr_id: str, split: str = "test", with_file: bool = True, color=(200, 30, 30)) -> Image:
        image = Image(vispr_id=vispr_id, split=split, source="test")
        if with_file:
            attach(image, clean_image(png_bytes(color=color)))
        image.save()
        return image

    return make


@pytest.fixture
def set_labels(db):
    """set_labels(image, annotator, {key: value}, default=0.0) writes one label per attribute."""

    def write(image, annotator, values: dict | None = None, default: float = 0.0):
        ids = taxonomy.attribute_ids()
        values = values or {}
        Label.objects.bulk_create(
            [Label(image=image, annotator=annotator, attribute_id=ids[k], value=values.get(k, default)) for k in ids]
        )
        label_version.bump([annotator.pk])  # written past the label-writing API: count it as that API would

    return write


@pytest.fixture
def model_annotators(db):
    return (
        Annotator.for_model("openai", "gpt-5.1", "annotate-v1"),
        Annotator.for_model("gemini", "gemini-3-flash", "annotate-v1"),
    )
