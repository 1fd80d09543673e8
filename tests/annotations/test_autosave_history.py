"""Autosave history is coalesced: a burst of draft saves leaves one history row, not one per save."""
from __future__ import annotations

from datetime import timedelta

import pytest

from annotations import taxonomy
from annotations.services import editing, image_history
from annotations.models import Labeling
from tests.support.labeling import claim

pytestmark = pytest.mark.django_db


def autosave(labeling, user, i: int, **kw) -> Labeling:
    keys = taxonomy.active().keys
    values = {k: (0.0, 0.5, 1.0)[(i + n) % 3] for n, k in enumerate(keys)}
    rationales = {k: f"typed {i} characters of the rationale for {k} " * 4 for k in keys}
    return editing.save_draft(labeling, user, version=labeling.version, values=values, rationales=rationales, note=f"note {i}", **kw)


def history_rows(labeling) -> int:
    return Labeling.history.filter(id=labeling.pk).count()


def test_two_hundred_autosaves_add_one_history_row(make_image, reviewer_a):
    make_image("2017_00000001")
    labeling = claim(reviewer_a)
    before = history_rows(labeling)
    for i in range(200):
        labeling = autosave(labeling, reviewer_a, i)
    assert history_rows(labeling) - before == 1
    latest = labeling.history.order_by("-history_date").first()
    assert latest.note == "note 199" and latest.version == labeling.version and latest.history_user == reviewer_a
    assert latest.draft_values == labeling.draft_values


def test_a_pause_starts_a_new_row(make_image, reviewer_a, settings):
    settings.CPRT_HISTORY_COALESCE_S = 60
    make_image("2017_00000001")
    labeling = autosave(claim(reviewer_a), reviewer_a, 0)
    before = history_rows(labeling)
    latest = labeling.history.order_by("-history_date").first()
    Labeling.history.filter(history_id=latest.history_id).update(history_date=latest.history_date - timedelta(seconds=61))
    labeling = autosave(labeling, reviewer_a, 1)
    assert history_rows(labeling) == before + 1
    labeling = autosave(labeling, reviewer_a, 2)
    assert history_rows(labeling) == before + 1


def test_flag_and_status_changes_keep_their_own_rows(make_image, reviewer_a):
    make_image("2017_00000001")
    labeling = autosave(claim(reviewer_a), reviewer_a, 0)
    before = history_rows(labeling)
    labeling = autosave(labeling, reviewer_a, 1, flag="broken")
    assert history_rows(labeling) == before + 1, "a flag change is its own row"
    keys = taxonomy.active().keys
    labeling = editing.submit(labeling, reviewer_a, version=labeling.version, values={k: 0.0 for k in keys}, rationales={})
    assert history_rows(labeling) == before + 2, "a submission is its own row"
    events = image_history.labeling_events(labeling.image)
    assert [e["status"] for e in events][:1] == [Labeling.STATUS_SUBMITTED]


def test_window_zero_keeps_a_row_per_save(make_image, reviewer_a, settings):
    settings.CPRT_HISTORY_COALESCE_S = 0
    make_image("2017_00000001")
    labeling = claim(reviewer_a)
    before = history_rows(labeling)
    for i in range(3):
        labeling = autosave(labeling, reviewer_a, i)
    assert history_rows(labeling) == before + 3
