"""The labeling queue: k human labelings per image, drafts hold slots, no two reviewers take the last slot."""
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from annotations.services import editing, labeling_queue
from annotations.models import Adjudication, Annotator, Attribute, Image, Labeling
from tests.conftest import make_user
from tests.support.labeling import claim, form_data

pytestmark = pytest.mark.django_db


def test_each_image_gets_k_human_labelings_and_never_twice_the_same_reviewer(settings, make_image):
    settings.CPRT_LABELINGS_PER_IMAGE = 2
    first, second = make_image("2017_00000001"), make_image("2017_00000002")
    a, b, c = (make_user(n, "reviewer") for n in ("ra", "rb", "rc"))
    assert claim(a).image == first
    assert claim(b).image == first  # started images are finished first
    assert claim(c).image == second  # the first image's two slots are taken (drafts count)
    assert labeling_queue.claim_next(a).image == first  # a resumes their draft rather than taking another image


def test_model_labelings_do_not_take_human_slots(settings, make_image, model_annotators):
    settings.CPRT_LABELINGS_PER_IMAGE = 1
    image = make_image("2017_00000001")
    Labeling.objects.create(image=image, annotator=model_annotators[0], status="submitted")
    assert claim(make_user("ra", "reviewer")).image == image


def test_submitted_reviewer_gets_a_new_image_and_queue_ends(settings, client, make_image):
    settings.CPRT_LABELINGS_PER_IMAGE = 1
    make_image("2017_00000001")
    make_image("2017_00000002")
    a = make_user("ra", "reviewer")
    client.force_login(a)
    seen = []
    for _ in range(2):
        labeling = claim(a)
        seen.append(labeling.image.vispr_id)
        client.post(f"/labelings/{labeling.pk}/submit", form_data(labeling))
    assert seen == ["2017_00000001", "2017_00000002"]
    assert labeling_queue.claim_next(a) is None
    assert labeling_queue.progress(a).done_total == 2 and labeling_queue.progress(a).done_today == 2
    assert labeling_queue.progress(a).left_in_queue == 0


def test_skip_frees_the_slot_for_someone_else_but_not_for_the_skipper(settings, make_image):
    settings.CPRT_LABELINGS_PER_IMAGE = 1
    image = make_image("2017_00000001")
    a, b = make_user("ra", "reviewer"), make_user("rb", "reviewer")
    labeling = claim(a)
    assert labeling_queue.claim_next(b) is None
    editing.skip(labeling, a)
    assert labeling_queue.claim_next(a) is None
    assert claim(b).image == image


def test_unsuitable_adjudicated_and_fileless_images_leave_the_queue(make_image, adjudicator):
    unsuitable = make_image("2017_00000001")
    unsuitable.unsuitable = True
    unsuitable.save()
    adjudicated = make_image("2017_00000002")
    Adjudication.objects.create(image=adjudicated, attribute=Attribute.objects.first(), value=0.0, adjudicator=adjudicator)
    make_image("2017_00000003", with_file=False)
    good = make_image("2017_00000004")
    a = make_user("ra", "reviewer")
    assert labeling_queue.progress(a).left_in_queue == 1
    assert claim(a).image == good
    assert labeling_queue.claim_next(make_user("rb", "reviewer")).image == good


def test_a_draft_on_an_image_marked_unsuitable_is_not_resumed(settings, make_image):
    first, second = make_image("2017_00000001"), make_image("2017_00000002")
    a = make_user("ra", "reviewer")
    assert claim(a).image == first
    Image.objects.filter(pk=first.pk).update(unsuitable=True)
    assert claim(a).image == second


def _claim_concurrently(users):
    """Every user asks for the next image at the same instant, each in its own thread and DB connection."""
    barrier = threading.Barrier(len(users))
    results, errors = {}, []

    def work(user):
        try:
            barrier.wait(timeout=30)
            labeling = labeling_queue.claim_next(user)
            results[user.username] = labeling.image_id if labeling else None
        except Exception as exc:  # surfaced below with the thread's user
            errors.append(f"{user.username}: {exc!r}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return results


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # keep the migrated taxonomy for later tests
@pytest.mark.parametrize("rounds", [3])
def test_concurrent_claims_never_overfill_the_last_slot(settings, make_image, rounds):
    """Real concurrency: PostgreSQL row locks (SKIP LOCKED + recount); SQLite serialises the IMMEDIATE transactions."""
    settings.CPRT_LABELINGS_PER_IMAGE = 2
    users = [make_user(f"r{i}", "reviewer") for i in range(10)]
    for r in range(rounds):
        Image.objects.all().delete()
        last_slot = make_image(f"2017_1000000{r}")
        holder = make_user(f"holder{r}", "reviewer")
        assert claim(holder).image == last_slot  # one slot left on this image
        for i in range(3):  # 6 more slots for 10 reviewers: 3 of them must come away empty-handed
            make_image(f"2017_2000{r}{i}", color=(i, r, 9))
        results = _claim_concurrently(users)
        took_last = [u for u, image_id in results.items() if image_id == last_slot.pk]
        assert len(took_last) == 1, f"{connection.vendor}: {took_last} all took the last slot"
        assert list(results.values()).count(None) == 3
        for image in Image.objects.all():
            assert image.labelings.filter(annotator__kind=Annotator.KIND_HUMAN).exclude(status="skipped").count() == 2
