"""factory_boy factories for test data that needs many distinct rows (accounts, images).

The personas in conftest.py stay plain fixtures; these are for tests that build their own world.
"""
from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from annotations.models import Batch, Image

from core.models import Profile
from tests.conftest import PASSWORD


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n:04d}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def role(user, create, extracted, **kwargs):
        """UserFactory(role="reviewer") gives the account a Profile with that role; role=None leaves it without."""
        user.save()
        if create and extracted:
            Profile.objects.create(user=user, role=extracted)


class BatchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Batch

    name = factory.Sequence(lambda n: f"batch-{n}")


class ImageFactory(factory.django.DjangoModelFactory):
    """An image row without stored bytes (use conftest's make_image for one with a file)."""

    class Meta:
        model = Image

    vispr_id = factory.Sequence(lambda n: f"2017_f{n:07d}")
    split = "test"
    source = "factory"
