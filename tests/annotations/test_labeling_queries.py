"""Constant query counts: the labeling page and the save endpoints with 10,000 images and 50,000 labels."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations import taxonomy
from annotations.models import Annotator, Batch, Image, Label
from tests.conftest import make_user
from tests.support.labeling import claim, form_data

pytestmark = pytest.mark.django_db

# SUBMIT_MAX covers the submit and the claim of the next image it opens (annotations.views.labeling_submit),
# and the one upsert of the label version a submit makes (annotations/label_version.py), and the two reads that
# record the model suggestions in view of the answers (assisted labels, services/editing.py `_record_suggestions`),
# and the two reads of the disagreement queues following the submission (the label version, the stored queues:
# scoring.services.disagreements.follow_image; none stored here).
PAGE_MAX, SAVE_MAX, SUBMIT_MAX = 16, 14, 33


def _bulk_data(n_images: int, n_labels: int, model: Annotator, batch: Batch):
    images = Image.objects.bulk_create(
        [Image(vispr_id=f"bulk_{i:06d}", split="test", file=f"aa/bulk{i}.png", batch=batch) for i in range(n_images)], batch_size=2000
    )
    attr_ids = list(taxonomy.attribute_ids().values())
    labels = []
    for i in range(n_labels):
        labels.append(Label(image=images[i // len(attr_ids)], annotator=model, attribute_id=attr_ids[i % len(attr_ids)],
                            value=(0.0, 0.5, 1.0)[i % 3]))
    Label.objects.bulk_create(labels, batch_size=5000)


def _measure(client, labeling):
    counts = {}
    page = reverse("annotations:labeling", kwargs={"labeling_id": labeling.pk})
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(page).status_code == 200
    counts["page"] = len(ctx)
    with CaptureQueriesContext(connection) as ctx:
        response = client.post(reverse("annotations:labeling_draft", kwargs={"labeling_id": labeling.pk}),
                               {"version": labeling.version, "value-age": "1"})
        assert response.status_code == 200
    counts["draft"] = len(ctx)
    labeling.refresh_from_db()
    with CaptureQueriesContext(connection) as ctx:
        assert client.post(reverse("annotations:labeling_submit", kwargs={"labeling_id": labeling.pk}), form_data(labeling)).status_code == 302
    counts["submit"] = len(ctx)
    labeling.refresh_from_db()
    with CaptureQueriesContext(connection) as ctx:
        # A submitted labeling is frozen (blind rule): the refusal must stay cheap too.
        assert client.post(reverse("annotations:labeling_submit", kwargs={"labeling_id": labeling.pk}),
                           form_data(labeling, default="1")).status_code == 403
    counts["resubmit"] = len(ctx)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(page).status_code == 200  # submitted: others' labels are shown
    counts["page_submitted"] = len(ctx)
    return counts


def test_query_counts_do_not_grow_with_data(client, django_assert_max_num_queries):
    gpt = Annotator.for_model("openai", "gpt-5.1", "annotate-v1")
    batch = Batch.objects.create(name="suggest", show_model_suggestions=True)
    _bulk_data(3, 66, gpt, batch)
    taxonomy.active()  # loaded once per process: keep that one-off read out of the first measurement
    small_user = make_user("small", "reviewer")
    client.force_login(small_user)
    small = _measure(client, claim(small_user))

    Image.objects.all().delete()
    _bulk_data(10_000, 50_000, gpt, batch)
    assert Image.objects.count() == 10_000 and Label.objects.count() == 50_000
    big_user = make_user("big", "reviewer")
    client.force_login(big_user)
    labeling = claim(big_user)
    assert Label.objects.filter(image=labeling.image).count() == 22  # suggestions exist for the claimed image
    big = _measure(client, labeling)
    print(f"query counts small={small} big={big}")
    assert big == small, f"query counts grew with the data: small={small} big={big}"
    assert big["page"] <= PAGE_MAX and big["page_submitted"] <= PAGE_MAX
    assert big["draft"] <= SAVE_MAX and big["submit"] <= SUBMIT_MAX and big["resubmit"] <= SUBMIT_MAX
    with django_assert_max_num_queries(PAGE_MAX):
        client.get(reverse("annotations:labeling", kwargs={"labeling_id": labeling.pk}))
