"""The admin's bulk "assign to a batch" action: a confirmation page, then one audited update."""
from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from annotations.models import Image

from core.models import AuditEvent
from tests.support.factories import BatchFactory, ImageFactory, UserFactory

pytestmark = pytest.mark.django_db
URL = reverse("admin:annotations_image_changelist")


def test_assign_selected_images_to_a_batch(client, admin_user):
    images = ImageFactory.create_batch(3)
    batch = BatchFactory(show_model_suggestions=True)
    client.force_login(admin_user)
    selected = [images[0].pk, images[1].pk]
    confirm = client.post(URL, {"action": "assign_batch", helpers.ACTION_CHECKBOX_NAME: selected})
    assert confirm.status_code == 200 and b"Assign 2 selected images to" in confirm.content
    done = client.post(URL, {"action": "assign_batch", helpers.ACTION_CHECKBOX_NAME: selected, "apply": "1", "batch": batch.pk})
    assert done.status_code == 302
    assert set(Image.objects.filter(batch=batch).values_list("pk", flat=True)) == set(selected)
    assert Image.objects.get(pk=images[2].pk).batch is None
    event = AuditEvent.objects.get(action="image.batch")
    assert sorted(event.data["image_ids"]) == sorted(selected) and event.actor == admin_user
    # and out again
    client.post(URL, {"action": "assign_batch", helpers.ACTION_CHECKBOX_NAME: selected, "apply": "1", "batch": ""})
    assert not Image.objects.filter(batch=batch).exists()


def test_unknown_batch_is_refused_and_nothing_changes(client, admin_user):
    image = ImageFactory()
    client.force_login(admin_user)
    response = client.post(URL, {"action": "assign_batch", helpers.ACTION_CHECKBOX_NAME: [image.pk], "apply": "1", "batch": "999999"})
    assert response.status_code == 400 and b"Select a valid choice" in response.content
    assert Image.objects.get(pk=image.pk).batch is None
    assert not AuditEvent.objects.filter(action="image.batch").exists()


def test_reviewers_cannot_use_the_admin(client):
    image = ImageFactory()
    client.force_login(UserFactory(role="reviewer"))
    response = client.post(URL, {"action": "assign_batch", helpers.ACTION_CHECKBOX_NAME: [image.pk], "apply": "1", "batch": ""})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
