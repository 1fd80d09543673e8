"""Migration annotations.0012: labelings from before assisted labels were recorded. The backfill marks, conservatively,
a human labeling of an image whose batch shows suggestions, where the shown models' labels predate the labeling's last
save; every row is kept and nothing else changes."""
from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from annotations import taxonomy
from annotations.models import Batch, Label, Labeling

migration = importlib.import_module("annotations.migrations.0012_labeling_assisted")


@pytest.mark.django_db
def test_backfill_marks_labelings_that_could_have_seen_suggestions(make_image, model_annotators, set_labels, reviewer_a, reviewer_b):
    from annotations.models import Annotator

    gpt, gemini = model_annotators
    batch = Batch.objects.create(name="on", show_model_suggestions=True)
    batch.suggestion_annotators.set([gpt])
    off = Batch.objects.create(name="off", show_model_suggestions=False)
    shown, later, quiet, outside = (make_image(f"2017_m{i}", color=(i, 3, 3)) for i in range(4))
    for image, b in ((shown, batch), (later, batch), (quiet, off)):
        image.batch = b
        image.save(update_fields=["batch"])
    for image in (shown, later, quiet, outside):
        set_labels(image, gpt, {"gov_ids": 1.0})
        set_labels(image, gemini, {"gov_ids": 0.0})  # not chosen in the batch: never a suggestion
    a = Annotator.for_user(reviewer_a)
    values = {k: 0.0 for k in taxonomy.active().keys}
    rows = {image.vispr_id: Labeling.objects.create(image=image, annotator=a, status="submitted", draft_values=values,
                                                    submitted_at=timezone.now())
            for image in (shown, later, quiet, outside)}
    # gpt labelled `later` only after the reviewer submitted it: nothing was in view.
    Label.objects.filter(image=later, annotator=gpt).update(created_at=timezone.now() + timedelta(hours=1))
    draft = Labeling.objects.create(image=shown, annotator=Annotator.for_user(reviewer_b))  # a draft could see them too
    count = Labeling.objects.count()

    migration.backfill(apps, None)

    assert Labeling.objects.count() == count
    marked = Labeling.objects.get(pk=rows["2017_m0"].pk)
    assert marked.assisted and marked.suggestions_seen == [gpt.name]
    assert marked.suggested_values["gov_ids"] == 1.0 and marked.suggested_values["age"] == 0.0
    assert marked.answers_as_suggested()["gov_ids"] is False and marked.answers_as_suggested()["age"] is True
    assert Labeling.objects.get(pk=draft.pk).assisted
    for vispr_id in ("2017_m1", "2017_m2", "2017_m3"):
        row = Labeling.objects.get(pk=rows[vispr_id].pk)
        assert not row.assisted and row.suggestions_seen == [] and row.suggested_values == {}
        assert row.draft_values == values and row.status == "submitted"
