"""Issue 13's counterfactual selection across several judge runs, driven from /runs/new/ in Chromium: the
admin fills "From judge run #", "with score ≥" and "and judge runs #", presses Estimate, then Launch, and
the launched run holds exactly the images every listed run scored at or above the threshold."""
from __future__ import annotations

import pytest

from inference.models import Run
from tests.conftest import make_user
from tests.fakes.fixtures import FAKE_KEY
from tests.support.permission_cases.scoring import add_results, make_images, make_run
from tests.support.workers import purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def openai_configured(monkeypatch, settings):
    """The provider counts as available; no request is sent (no worker runs in this test)."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = FAKE_KEY, "http://127.0.0.1:9/v1"


def test_selection_by_several_judge_runs_from_the_launch_form(journey, openai_configured):
    make_user("cf-admin", "admin")
    images = make_images(10, prefix="2017_72")
    first, second = make_run(model="judge-a"), make_run(model="judge-b")
    # first: images 0-5 confidently severe; second: images 3-9. Both: images 3, 4, 5.
    add_results(first, [(image, "ok", 0.9 if k <= 5 else 0.2) for k, image in enumerate(images)])
    add_results(second, [(image, "ok", 0.85 if k >= 3 else 0.1) for k, image in enumerate(images)])
    both = sorted(image.pk for image in images[3:6])
    page = journey.page_for("cf-admin")  # logged in (the home page lists the images) before they get file names
    for image in images:  # selection only keeps images with stored bytes (never served in this test)
        image.file.name = f"x/{image.vispr_id}.jpg"
        image.save(update_fields=["file"])

    journey.visit(page, "/runs/new/", "cf-selection-form")
    page.select_option("select[name=task]", "judge")
    page.wait_for_selector("#launch-form[data-kind='judge']")  # the form re-renders for the chosen kind
    page.wait_for_load_state("networkidle")
    page.fill("input[name=model_name]", "gpt-5.1")
    page.select_option("select[name=strategy]", "zero_shot")
    page.check("input[name=counterfactual_faces]")
    page.fill("input[name=from_run]", str(first.pk))
    page.fill("input[name=min_score]", "0.8")
    page.fill("input[name=also_from_runs]", str(second.pk))
    with page.expect_navigation():
        page.click("button[name=action][value=estimate]")
    estimate = page.inner_text("#estimate")
    assert "3 images" in estimate, [estimate, page.locator(".errorlist").all_inner_texts()]
    journey.shot(page, "cf-selection-estimate")

    before = set(Run.objects.values_list("pk", flat=True))
    with page.expect_navigation():
        page.click("button[name=action][value=launch]")
    assert "/runs/new/" not in page.url, page.inner_text("main")[:600]
    run = Run.objects.exclude(pk__in=before).get()
    assert sorted(run.image_ids) == both
    assert run.counterfactual_faces
    assert f"#{second.pk}" in page.inner_text("main") or str(second.pk) in page.inner_text("main")
    journey.shot(page, "cf-selection-launched")
    purge_broker()  # no worker here: leave no queued message behind for later tests
