"""The reviewer's journey in Chromium: log in, label three images with the keyboard alone, skip with undo,
reopen a skipped and a submitted image, two tabs on one draft, the blind home page, a narrow window."""
from __future__ import annotations

import pytest

from annotations import taxonomy
from annotations.services import editing, labeling_queue
from annotations.models import Label, Labeling
from tests.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _labeling_ready(page):
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")


def _answer_all_with_keys(page, key: str):
    for _ in taxonomy.active().keys:
        page.keyboard.press(key)
    page.wait_for_selector("form[data-save-state='saved']", state="attached")


def test_reviewer_journey(journey, make_image, settings):
    settings.CPRT_LABELINGS_PER_IMAGE = 2
    images = [make_image(f"2017_0000100{i}", color=(40 * i, 90, 200 - 30 * i)) for i in range(1, 7)]
    make_user("rita", "reviewer")
    bob = make_user("bob", "reviewer")
    first = labeling_queue.claim_next(bob)  # bob labels image 1 first: rita will see his labels only after her own submit
    values = {k: 1.0 for k in taxonomy.active().keys}
    editing.submit(first, bob, version=first.version, values=values, rationales={})

    page = journey.page_for("rita")
    journey.visit(page, "/", "reviewer-home")
    assert "consensus hidden until you label it" in page.inner_text("main")

    # Three images with the keyboard alone: Enter on the autofocused button, n/y per question, Enter submits
    # and opens the next image.
    journey.visit(page, "/label/", "reviewer-queue")
    page.wait_for_function("document.activeElement && document.activeElement.matches('button[type=submit]')")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    for n, key in enumerate(("n", "y", "n")):
        _labeling_ready(page)
        if n == 0:
            journey.shot(page, "reviewer-labeling")
        vispr = page.inner_text("h1 code")
        _answer_all_with_keys(page, key)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert f"Submitted your labels for image {vispr}" in page.inner_text(".messages")
        journey.check(page)
    assert Labeling.objects.filter(annotator__user__username="rita", status="submitted").count() == 3
    assert Label.objects.filter(annotator__user__username="rita").count() == 3 * len(taxonomy.active().keys)

    # Skip with answers asks first; dismissing keeps the image, accepting skips; "Undo skip" brings it back.
    _labeling_ready(page)
    skipped_vispr = page.inner_text("h1 code")
    page.keyboard.press("y")
    page.wait_for_selector("form[data-save-state='saved']", state="attached")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.keyboard.press("k")
    page.wait_for_timeout(200)
    assert page.inner_text("h1 code") == skipped_vispr
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.keyboard.press("k")
    _labeling_ready(page)
    assert page.inner_text("h1 code") != skipped_vispr
    journey.shot(page, "reviewer-undo-skip")
    with page.expect_navigation():
        page.click("[data-action='undo-skip']")
    _labeling_ready(page)
    assert page.inner_text("h1 code") == skipped_vispr
    assert page.locator("input[type=radio]:checked").count() == 1  # the answer given before the skip is kept

    # Skip again (accepting), then reopen it from the skipped list on the Label page.
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.keyboard.press("k")
    journey.visit(page, "/label/", "reviewer-queue-skipped")
    assert skipped_vispr in page.inner_text("ul.skipped")
    with page.expect_navigation():
        page.click("ul.skipped button")
    _labeling_ready(page)
    assert page.inner_text("h1 code") == skipped_vispr

    # A focused button keeps Space: one press toggles the blur exactly once.
    blur = page.locator("[data-blur-button]")
    before = blur.get_attribute("aria-pressed")
    blur.focus()
    page.keyboard.press(" ")
    assert blur.get_attribute("aria-pressed") != before
    # Focus and the current row are the same: tabbing into a row's answer makes that row current.
    page.locator(".q-row").nth(5).locator("input[type=radio]").first.focus()
    assert "current" in page.locator(".q-row").nth(5).get_attribute("class")

    # Two tabs on one draft: the second tab's stale save is refused and says so, nothing overwritten.
    other_tab = journey.new_page(context=page.context)
    with journey.expect_status(409):
        other_tab.goto(page.url)
        _labeling_ready(other_tab)
        page.locator(".q-row").nth(1).locator("input[value='0']").check()
        page.wait_for_selector("form[data-save-state='saved']", state="attached")
        other_tab.locator(".q-row").nth(2).locator("input[value='1']").check()
        other_tab.wait_for_selector("form[data-save-state='conflict']", state="attached")
    assert other_tab.locator("[data-conflict-banner]").is_visible()
    journey.shot(other_tab, "reviewer-two-tabs-conflict")
    other_tab.close()

    # Reopen a submitted image: the others' labels are shown, and the labeling is final (no submit).
    journey.visit(page, "/label/", None, shot=False)
    page.click(f"text={images[0].vispr_id}")
    _labeling_ready(page)
    body = page.inner_text("main")
    assert "reviewer #1: Yes" in body and "is final" in body
    assert page.locator("[data-action='submit']").count() == 0
    journey.shot(page, "reviewer-submitted-final")

    # The home page now shows the consensus of the images rita submitted only, and links them to her labelings.
    journey.visit(page, "/", "reviewer-home-after")
    tile = page.locator(f"figure[data-vispr-id='{images[0].vispr_id}']")
    assert tile.locator("a").count() >= 1
    assert "consensus hidden" in page.locator(f"figure[data-vispr-id='{images[5].vispr_id}']").inner_text()

    # A narrow window (800 px): the image stays in view while answering the last question.
    narrow = journey.new_page(width=800, height=700, context=None)
    narrow.context.add_cookies(page.context.cookies())
    journey.visit(narrow, page.url if "/labelings/" in page.url else "/label/", None, shot=False)
    draft = Labeling.objects.filter(annotator__user__username="rita", status="draft").first()
    journey.visit(narrow, f"/labelings/{draft.pk}/", "reviewer-labeling-800px")
    _labeling_ready(narrow)
    narrow.locator(".q-row").last.scroll_into_view_if_needed()
    box = narrow.locator(".labeling-figure img, .labeling-figure .nofile").first.bounding_box()
    assert box is not None and box["y"] < 700 and box["y"] + box["height"] > 0, f"the image scrolled away: {box}"
    journey.shot(narrow, "reviewer-labeling-800px-scrolled")
