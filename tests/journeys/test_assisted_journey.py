"""Assisted labels and blind filters, in Chromium (issue 38): a reviewer in a batch with model suggestions on accepts
every suggestion with the a key and submits with Enter; the labeling is recorded as assisted; the adjudicator sees it
marked on the review page and the agreement page leaves it out by default, the assisted figures one click away; a
reviewer's Images page lists nothing under a VISPR-label filter for an image they have not labelled."""
from __future__ import annotations

import pytest

from annotations import taxonomy
from annotations.models import Batch, Image, Labeling
from core.models import Profile
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support import faces as photos
from tests.support.permission_cases.scoring import label_everything

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_accepting_suggestions_is_recorded_as_assisted_and_kept_apart(journey, make_image, model_annotators):
    image = photos.store("2017_95_astro", photos.encoded(photos.astronaut()))
    gpt, gem = model_annotators
    first_key = taxonomy.active().keys[0]
    label_everything([image], gpt, lambda i, k: 1.0 if k == first_key else 0.0)
    label_everything([image], gem, lambda i, k: 1.0 if k == first_key else 0.0)
    batch = Batch.objects.create(name="assisted-journey", show_model_suggestions=True)
    batch.suggestion_annotators.set([gpt, gem])
    Image.objects.filter(pk=image.pk).update(batch=batch)
    passport = make_image("2017_95_passport", with_file=False)  # not in the queue (no file): only listed, never labelled
    Image.objects.filter(pk=passport.pk).update(vispr_labels=["a31_passport"])
    make_user("zoe", "reviewer")
    make_user("ada", "adjudicator")
    Profile.objects.filter(user__username="zoe").update(blur_images_by_default=False)

    page = journey.page_for("zoe")
    # Blind filters: nothing submitted yet, so a filter from others' labels lists nothing.
    journey.visit(page, "/?vispr_label=a31_passport", "assisted-images-filter")
    assert page.locator("figure.tile").count() == 0
    assert "look only at the images you have submitted" in page.inner_text("main")
    journey.visit(page, "/label/", None, shot=False)
    with page.expect_navigation():
        page.click("text=Next image")
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")
    assert "recorded as assisted" in page.inner_text(".suggestion-note")
    journey.shot(page, "assisted-labeling")
    for _ in taxonomy.active().keys:  # a accepts the current question's suggestion and moves to the next
        page.keyboard.press("a")
    page.wait_for_selector("#labeling-form[data-save-state=saved]", state="attached")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    labeling = Labeling.objects.get(image=image, annotator__user__username="zoe")
    assert labeling.status == Labeling.STATUS_SUBMITTED and labeling.assisted
    assert labeling.suggestions_seen == sorted([gpt.name, gem.name])
    answers = labeling.answers_as_suggested()
    assert len(answers) == len(taxonomy.active().keys) and all(answers.values())
    journey.check(page)

    staff = journey.page_for("ada")
    journey.visit(staff, f"/scoring/images/{image.pk}/review/", "assisted-review")
    header = staff.locator("table.review thead").inner_text()
    assert "human:zoe" in header and "assisted" in header
    assert staff.locator("table.review span[title='equals the model suggestion shown']").count() == len(taxonomy.active().keys)
    journey.visit(staff, "/scoring/agreement/", "assisted-agreement")
    note = staff.locator("p.assisted-note")
    assert note.get_attribute("data-assisted") == "exclude" and "1 of 1 submitted human labelings" in note.inner_text()
    with staff.expect_navigation():
        note.locator("a", has_text="independent and assisted").click()
    assert "assisted=include" in staff.url and staff.locator("p.assisted-note").get_attribute("data-assisted") == "include"
    journey.check(staff)
