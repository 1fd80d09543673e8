"""The adjudicator's journey in Chromium: home, agreement, the disagreement queue, review and adjudicate an
image, move to the next disputed image, and read the history with the adjudication in it."""
from __future__ import annotations

import pytest

from annotations.models import Adjudication
from scoring.models import ScoringProfile
from scoring.services.scores import recompute_scores
from tests.conftest import make_user
from tests.support.permission_cases.scoring import label_everything, make_images

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_adjudicator_journey(journey, model_annotators):
    images = make_images(3, prefix="2017_83", with_published=False)
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k in ("gov_ids", "age", "location") else 0.0)
    label_everything(images, gem, lambda i, k: 1.0 if k == "age" or (k == "location" and i % 2) else 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    make_user("ada", "adjudicator")

    page = journey.page_for("ada")
    journey.visit(page, "/", "adjudicator-home")
    with page.expect_navigation():
        page.click(f"figure[data-vispr-id='{images[0].vispr_id}'] figcaption a")
    assert "/review/" in page.url
    journey.visit(page, "/scoring/agreement/", "adjudicator-agreement")
    journey.visit(page, "/scoring/disagreements/", "adjudicator-disagreements")
    with page.expect_navigation():
        page.locator("table a[href*='/review/']").first.click()
    journey.shot(page, "adjudicator-review")
    journey.check(page)
    image_id = int(page.url.rstrip("/").split("/")[-2])

    # Set the final label of gov_ids: the select starts at the consensus; the adjudicator picks 1 and writes a note.
    row = page.locator("tr", has=page.locator("input[name=attribute][value=gov_ids]"))
    assert row.locator("select[name=value]").input_value() == "0"
    row.locator("select[name=value]").select_option("1")
    row.locator("input[name=note]").fill("passport on the desk")
    with page.expect_navigation():
        row.locator("button").click()
    assert "gov_ids of" in page.inner_text(".messages")
    assert Adjudication.objects.get(image_id=image_id, attribute__key="gov_ids").value == 1.0
    journey.shot(page, "adjudicator-adjudicated")

    # On to the next disputed image, then the history of the first one shows the adjudication.
    with page.expect_navigation():
        page.click("a[rel=next], a[rel=prev]")
    assert f"/images/{image_id}/" not in page.url
    journey.check(page)
    journey.visit(page, f"/scoring/images/{image_id}/review/", None, shot=False)
    with page.expect_navigation():
        page.click(".review-nav >> text=history")
    journey.shot(page, "adjudicator-history")
    assert "passport on the desk" in page.inner_text("table.adjudications")
    journey.check(page)
