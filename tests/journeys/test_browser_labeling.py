"""Browser tests of the labeling page in Debian's Chromium (Playwright, sync API) against live_server.

Skipped when /usr/bin/chromium is missing unless CPRT_REQUIRE_BROWSER=1, which turns the skip into a
failure (CI with a browser must not silently skip). Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import os
import re

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls in these tests are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

from annotations import taxonomy  # noqa: E402
from annotations.services import labeling_queue  # noqa: E402
from annotations.models import Label, Labeling  # noqa: E402
from tests.conftest import make_user  # noqa: E402
from tests.support.browser import ARTIFACTS, log_in  # noqa: E402

# serialized_rollback: the flush after a transactional test would otherwise drop the taxonomy loaded by migrations.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"labeling-{name}.png"), full_page=True)


def open_labeling(page, url):
    response = page.goto(url)
    assert response.status == 200, f"{url}: HTTP {response.status}: {page.inner_text('body')[:500]}"
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")


def test_label_everything_with_the_keyboard(browser, live_server, make_image):
    image = make_image("2017_00000042")
    make_user("keyboard", "reviewer")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    log_in(page, live_server.url, "keyboard")
    shot(page, "1-logged-in")
    page.goto(f"{live_server.url}/label/")
    # Enter goes to the focused element: wait until autofocus has put the "Next image" button there (under
    # CI's load the key could otherwise arrive before the focus and do nothing).
    page.wait_for_function("document.activeElement && document.activeElement.matches('button[type=submit]')")
    page.keyboard.press("Enter")  # the autofocused "Next image" button
    page.wait_for_url(re.compile(r".*/labelings/\d+/$"))
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")
    assert "blurred" in page.get_attribute("#labeling-image", "class")
    shot(page, "2-blank-form")

    page.keyboard.press("Enter")  # nothing answered: the page names what is missing and stays
    assert "Missing (22)" in page.inner_text("[data-errors]")
    assert Labeling.objects.get(image=image).status == "draft"

    page.keyboard.press("b")  # reveal
    assert "blurred" not in page.get_attribute("#labeling-image", "class")
    page.keyboard.press("b")  # and blur again
    assert "blurred" in page.get_attribute("#labeling-image", "class")

    keys = taxonomy.active().keys
    presses = ["y", "n", "u", "1", "0", "5"]
    expected = {}
    for i, key in enumerate(keys):  # each answer moves to the next question
        press = presses[i % len(presses)]
        page.keyboard.press(press)
        expected[key] = {"y": 1.0, "1": 1.0, "n": 0.0, "0": 0.0, "u": 0.5, "5": 0.5}[press]
    # Go back up two rows and change that answer.
    page.keyboard.press("ArrowUp")  # the last answer stays on the last row
    page.keyboard.press("ArrowUp")
    changed = keys[-3]
    page.keyboard.press("y")
    expected[changed] = 1.0
    page.wait_for_selector("#labeling-form[data-save-state='saved']")  # no wait_for_function: the CSP forbids eval
    assert "22 of 22" in page.inner_text("[data-save-status]")
    shot(page, "3-all-answered")
    # The draft survived a reload.
    page.reload()
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")
    assert page.is_checked(f"input[name='value-{changed}'][value='1']")

    with page.expect_navigation():
        page.keyboard.press("Enter")  # submits and opens the next image: none is left here, so the Label page
    assert page.url.endswith("/label/") and "Submitted your labels for image 2017_00000042" in page.inner_text(".messages")
    shot(page, "4-submitted")
    labeling = Labeling.objects.get(image=image)
    assert labeling.status == "submitted"
    stored = dict(Label.objects.filter(image=image, annotator=labeling.annotator).values_list("attribute__key", "value"))
    assert stored == expected


def test_two_tabs_conflict(browser, live_server, make_image):
    make_image("2017_00000043")
    user = make_user("twotabs", "reviewer")
    labeling = labeling_queue.claim_next(user)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    first = context.new_page()
    log_in(first, live_server.url, "twotabs")
    url = f"{live_server.url}/labelings/{labeling.pk}/"
    open_labeling(first, url)
    second = context.new_page()
    open_labeling(second, url)

    first.keyboard.press("y")
    first.wait_for_selector("#labeling-form[data-save-state='saved']")
    second.keyboard.press("n")
    second.wait_for_selector("[data-conflict-banner]:not([hidden])")
    message = second.inner_text("[data-conflict-banner]")
    assert "saved elsewhere" in message and "Nothing was overwritten" in message and "Reload" in message
    shot(second, "5-conflict")
    labeling.refresh_from_db()
    assert labeling.version == 2 and labeling.draft_values == {taxonomy.active().keys[0]: 1.0}

    second.click("[data-reload]")
    second.wait_for_selector("html[data-labeling-ready='1']", state="attached")
    assert second.is_checked(f"input[name='value-{taxonomy.active().keys[0]}'][value='1']")
    context.close()
