"""An adjudication, or a reviewer's submission, brings a current disagreement queue up to date in its own
transaction, by writing its image's row again, not by recomputing the whole queue (issue 37: 14 s at 100,000 images); what it leaves equals a full
recomputation. A queue that was stale before the adjudication is left to its refresh job, and so is one when
another write commits while the adjudication's transaction is open; two adjudications at once both follow it
(PostgreSQL).

On the code before this change, every adjudication left every queue stale: the next page recomputed the whole
queue (dispute_impact over every image) or, at scale, served it "updating" until a job had.
"""
from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connection

from annotations import label_version, taxonomy
from annotations.models import Image
from annotations.services.editing import submit
from annotations.services.labeling_queue import claim_next
from annotations.services.labels import write_labels
from scoring import disputes
from scoring.models import ComputedMetrics, DisputedImage, ScoringProfile
from scoring.services import adjudication as adjudication_service
from scoring.services import disagreements as disagreements_service
from scoring.services.adjudication import active_attributes, adjudicate
from scoring.services.disagreements import disagreement_queue
from tests.support.permission_cases.scoring import label_everything, make_images

SPLITS = ("", "test", "train")  # every image is in "test": the "train" queue is empty and reads none of them


@pytest.fixture
def queue_world(model_annotators):
    images = make_images(30, prefix="2017_87", with_published=False)
    gpt, gem = model_annotators
    keys = list(taxonomy.active().keys)
    label_everything(images, gpt, lambda i, k: float((i + keys.index(k)) % 4 == 0))
    label_everything(images, gem, lambda i, k: float((i + keys.index(k)) % 3 == 0))
    profile = ScoringProfile.active()
    return images, profile


def _rows(key: str) -> list[tuple]:
    fields = ("image_id", "impact", "n_disputed", "level_changes", "score_lo", "score_hi", "level_lo", "level_hi", "disputed",
              "pairs", "attribute_mask", "pair_mask")
    return list(DisputedImage.objects.filter(queue=key).order_by("image_id").values_list(*fields))


def _state(profile) -> dict:
    """Every split's queue entry (as a page reads it) and its rows."""
    out = {}
    for split in SPLITS:
        queue = disagreement_queue(profile, split)
        out[split] = (queue, _rows(queue["key"]))
    return out


def _from_scratch(profile) -> dict:
    ComputedMetrics.objects.filter(key__startswith="disagreements:").delete()
    DisputedImage.objects.all().delete()
    return _state(profile)


def _current_without_recomputing(profile) -> dict:
    with mock.patch.object(disputes, "dispute_impact", wraps=disputes.dispute_impact) as impact:
        state = _state(profile)
        assert impact.call_count == 0  # every queue was current (a stale one is recomputed inline at this size)
    return state


def test_each_adjudication_of_an_image_updates_its_row_in_every_current_queue_as_a_recomputation_would(queue_world, adjudicator):
    images, profile = queue_world
    _state(profile)  # every queue current
    image = next(i for i in images if len(DisputedImage.objects.get(queue="disagreements:all:profile:%d" % profile.pk,
                                                                     image=i).disputed) >= 2)
    disputed = DisputedImage.objects.get(queue=f"disagreements:all:profile:{profile.pk}", image=image).disputed
    attributes = active_attributes()
    for n, key in enumerate(disputed, 1):
        adjudicate(adjudicator, image, attributes[key], 1.0 if n % 2 else 0.0, "decided")
        followed = _current_without_recomputing(profile)
        row = DisputedImage.objects.filter(queue=f"disagreements:all:profile:{profile.pk}", image=image).first()
        if n < len(disputed):
            assert key not in row.disputed and row.n_disputed == len(disputed) - n
        else:
            assert row is None  # nothing disputed any more: the image left the queue
        assert followed["train"][1] == []
        assert followed == _from_scratch(profile)  # rows, counts, annotators and pairs: those of a full recomputation


def test_a_queue_stale_before_the_adjudication_is_left_stale_and_its_recomputation_is_whole(queue_world, adjudicator):
    images, profile = queue_world
    _state(profile)
    label_version.bump([label_version.ADJUDICATIONS])  # a write the stored queues have not seen
    key = f"disagreements:all:profile:{profile.pk}"
    stale = ComputedMetrics.objects.get(key=key).fingerprint
    image = DisputedImage.objects.filter(queue=key).order_by("image_id").first().image
    adjudicate(adjudicator, image, active_attributes()[DisputedImage.objects.get(queue=key, image=image).disputed[0]], 1.0, "decided")
    assert ComputedMetrics.objects.get(key=key).fingerprint == stale  # not made current by this image's row alone
    with mock.patch.object(disputes, "dispute_impact", wraps=disputes.dispute_impact) as impact:
        recomputed = _state(profile)
        assert impact.call_count == len(SPLITS)
    assert recomputed == _from_scratch(profile)


def test_a_reviewers_submission_updates_its_images_row_once_the_reviewer_is_in_the_queue(queue_world, reviewer_a):
    images, profile = queue_world
    keys = list(taxonomy.active().keys)
    Image.objects.filter(pk__in=[i.pk for i in images]).update(file="stored.jpg")  # reviewers are offered stored images

    def submit_next(value):
        labeling = claim_next(reviewer_a)
        submit(labeling, reviewer_a, version=labeling.version, values={k: value(keys.index(k)) for k in keys}, rationales={})
        return labeling.image_id

    _state(profile)
    submit_next(lambda j: float(j % 2 == 0))  # a new annotator: the queue's annotators and pairs change
    with mock.patch.object(disputes, "dispute_impact", wraps=disputes.dispute_impact) as impact:
        _state(profile)
        assert impact.call_count == len(SPLITS)  # left stale, recomputed whole
    for value in (lambda j: float(j % 3 == 0), lambda j: 0.5):
        image_id = submit_next(value)
        followed = _current_without_recomputing(profile)
        row = DisputedImage.objects.filter(queue=f"disagreements:all:profile:{profile.pk}", image_id=image_id).first()
        assert row is not None and any(reviewer_a.annotator.pk in pair for pair in row.pairs)
        assert followed == _from_scratch(profile)


# --- concurrent writers (PostgreSQL: SQLite runs one writing transaction at a time) --------------------------------

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent writing transactions are PostgreSQL's")


def _adjudicate_pausing(adjudicator, image, key: str, paused: threading.Event, go_on: threading.Event, monkeypatch):
    """A thread adjudicating `image`'s attribute `key` that stops inside its transaction, after its write and before
    the queues follow it, until `go_on` is set."""
    real = adjudication_service.follow_adjudication

    def follow(image_id):
        if threading.current_thread().name == "paused":
            paused.set()
            go_on.wait(10)
        real(image_id)

    monkeypatch.setattr(adjudication_service, "follow_adjudication", follow)

    def run():
        try:
            adjudicate(adjudicator, image, active_attributes()[key], 1.0, "decided")
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="paused")
    thread.start()
    assert paused.wait(10)
    return thread


@postgresql_only
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_adjudications_at_once_both_follow_the_queue_one_after_the_other(queue_world, adjudicator, monkeypatch):
    images, profile = queue_world
    key = f"disagreements:all:profile:{profile.pk}"
    _state(profile)
    first, second = DisputedImage.objects.filter(queue=key).order_by("image_id")[:2]
    paused, go_on = threading.Event(), threading.Event()
    thread = _adjudicate_pausing(adjudicator, first.image, first.disputed[0], paused, go_on, monkeypatch)

    def other():  # waits for the first one's transaction (both write the adjudications' label-version row)
        try:
            adjudicate(adjudicator, second.image, active_attributes()[second.disputed[0]], 0.0, "decided")
        finally:
            connection.close()

    other_thread = threading.Thread(target=other, name="other")
    other_thread.start()
    other_thread.join(1.0)
    go_on.set()
    thread.join(20)
    other_thread.join(20)
    assert not thread.is_alive() and not other_thread.is_alive()
    followed = _current_without_recomputing(profile)  # the second found the queue the first had left current
    assert followed == _from_scratch(profile)


@postgresql_only
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_label_write_committed_during_an_adjudication_leaves_the_queue_stale_not_wrong(queue_world, model_annotators, adjudicator,
                                                                                       monkeypatch):
    images, profile = queue_world
    key = f"disagreements:all:profile:{profile.pk}"
    _state(profile)
    decided = DisputedImage.objects.filter(queue=key).order_by("image_id").first()
    paused, go_on = threading.Event(), threading.Event()
    thread = _adjudicate_pausing(adjudicator, decided.image, decided.disputed[0], paused, go_on, monkeypatch)
    # Another image's labels change and commit while the adjudication's transaction is open: its row changes too.
    other = next(i for i in images if i.pk != decided.image_id)
    gpt, _ = model_annotators
    write_labels(other.pk, gpt.pk, {aid: (1.0, "") for aid in taxonomy.attribute_ids().values()})
    go_on.set()
    thread.join(20)
    assert not thread.is_alive()
    assert ComputedMetrics.objects.get(key=key).data["count"] == len(_rows(key))  # the entry and its rows agree
    with mock.patch.object(disputes, "dispute_impact", wraps=disputes.dispute_impact) as impact:
        recomputed = _state(profile)
        assert impact.call_count == len(SPLITS)  # not marked current with the other image's row missing
    assert recomputed == _from_scratch(profile)


@postgresql_only
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_reviewers_saving_at_once_both_follow_the_queue(queue_world, reviewer_a, reviewer_b, monkeypatch):
    """Each reviewer counts on a label-version stream of their own, so nothing but the queue's locks orders two saves.
    The second save reads the label version while the first one, which has followed the queue, is still open, then
    waits for the locks until it commits: on the code before, where the version was read before the locks, the
    second save found the queue moved by the first one's writes that its version did not count, and left it stale."""
    images, profile = queue_world
    keys = list(taxonomy.active().keys)
    Image.objects.filter(pk__in=[i.pk for i in images]).update(file="stored.jpg")  # reviewers are offered stored images
    for reviewer in (reviewer_a, reviewer_b):  # each one's first save: new to the queue, which is recomputed below
        labeling = claim_next(reviewer)
        submit(labeling, reviewer, version=labeling.version, values={k: float(keys.index(k) % 2) for k in keys}, rationales={})
    _state(profile)
    claimed = {reviewer: claim_next(reviewer) for reviewer in (reviewer_a, reviewer_b)}
    first_followed, second_read_version = threading.Event(), threading.Event()
    real_follow, real_current = disagreements_service.follow_image, label_version.current

    def follow(image_id, writes):
        real_follow(image_id, writes)
        if threading.current_thread().name == "first":
            first_followed.set()
            second_read_version.wait(3)  # the fixed code reads it only once this save has committed: waits in vain

    def current(*args, **kwargs):
        version = real_current(*args, **kwargs)
        if threading.current_thread().name == "second":
            second_read_version.set()
        return version

    monkeypatch.setattr(disagreements_service, "follow_image", follow)
    monkeypatch.setattr(label_version, "current", current)

    def save(reviewer, value):
        try:
            labeling = claimed[reviewer]
            submit(labeling, reviewer, version=labeling.version, values={k: value for k in keys}, rationales={})
        finally:
            connection.close()

    first = threading.Thread(target=save, args=(reviewer_a, 1.0), name="first")
    first.start()
    assert first_followed.wait(10)
    second = threading.Thread(target=save, args=(reviewer_b, 0.0), name="second")
    second.start()
    first.join(20)
    second.join(20)
    assert not first.is_alive() and not second.is_alive()
    followed = _current_without_recomputing(profile)  # both saves' rows written, the queue current
    assert followed == _from_scratch(profile)
