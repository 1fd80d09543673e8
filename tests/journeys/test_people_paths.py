"""The people's paths, round two, in Chromium: *Set* then "next disputed" follows the queue as it was when
the adjudicator entered it; *Set* stays in view at 1280 px beside six annotators; skipping, then the queue
page; zooming and panning the labeling image with the keyboard; accepting a model suggestion with a key;
the Images page's filters; the preference page; and, at 800 px, no page that scrolls sideways.

With CPRT_DOCS_SCREENSHOTS=1 these journeys also refresh the README's pictures (docs/screenshots/)."""
from __future__ import annotations

import re

import pytest

from annotations import taxonomy
from annotations.models import Adjudication, Annotator, Batch, Image, Label, Labeling
from core.models import Profile
from inference import execution, launching
from inference.forms import LaunchForm
from scoring.models import ScoringProfile
from scoring.review_views import entered_order
from scoring.services.scores import recompute_scores
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support import faces as photos
from tests.support.permission_cases.scoring import label_everything, make_images

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# One disputed attribute set per image (gpt says 1, gemini 0): the impact order is image 0, 1, 2, 3.
DISPUTES = [("gov_ids", "location"), ("full_legal_name",), ("age",), ("documents",)]
# Horizontal overflow of the page: the document is wider than the window.
OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def live_order(profile) -> list[int]:
    return entered_order(profile)


def test_set_then_next_goes_on_in_the_order_the_adjudicator_entered(journey, model_annotators):
    images = make_images(4, prefix="2017_84", with_published=False)
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k in DISPUTES[i] else 0.0)
    label_everything(images, gem, lambda i, k: 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    entered = live_order(profile)
    assert entered == [image.pk for image in images]
    make_user("ada", "adjudicator")

    page = journey.page_for("ada")
    journey.visit(page, "/scoring/disagreements/", "paths-disagreements")
    with page.expect_navigation():
        page.locator("table a[href*='/review/']").first.click()
    assert f"/images/{images[0].pk}/review/" in page.url
    assert "disputed image 1 of 4" in page.inner_text(".review-nav")

    # Set gov_ids of the top image to 0: its impact falls and the live queue puts it lower down.
    row = page.locator("tr", has=page.locator("input[name=attribute][value=gov_ids]"))
    row.locator("select[name=value]").select_option("0")
    with page.expect_navigation():
        row.locator("button", has_text="Set").click()
    assert Adjudication.objects.get(image=images[0], attribute__key="gov_ids").value == 0.0
    live = live_order(profile)
    at = live.index(images[0].pk)
    assert at >= 1 and live[at + 1] != images[1].pk, live  # following the live queue would skip image 1
    nav = page.inner_text(".review-nav")
    assert "disputed image 1 of 4" in nav and "as ordered when you entered it" in nav
    journey.shot(page, "paths-after-set")
    with page.expect_navigation():
        page.click("a[rel=next]")
    assert f"/images/{images[1].pk}/review/" in page.url
    assert "disputed image 2 of 4" in page.inner_text(".review-nav")
    with page.expect_navigation():
        page.click("a[rel=next]")
    assert f"/images/{images[2].pk}/review/" in page.url
    # Refreshing takes the live order: the page says where this image stands in it now.
    with page.expect_navigation():
        page.click("text=Refresh the order")
    assert f"disputed image {live.index(images[2].pk) + 1} of 4" in page.inner_text(".review-nav")
    journey.check(page)


def test_set_stays_in_view_at_1280_px_beside_six_annotators(journey, model_annotators, make_image):
    image = photos.store("2017_85_astro", photos.encoded(photos.astronaut()))
    models = list(model_annotators) + [Annotator.for_model("vllm", "Qwen/Qwen2.5-VL-72B-Instruct", "annotate-v2"),
                                       Annotator.for_model("openai", "gpt-5.1-mini", "annotate-v2")]
    why = "A long rationale that a model wrote about this attribute, with several clauses, so the column grows wide."
    for n, annotator in enumerate(models):
        label_everything([image], annotator, lambda i, k, n=n: 1.0 if (k == "biometrics" or (k == "age" and n % 2)) else 0.0)
        Label.objects.filter(annotator=annotator).update(rationale=why)
    for name in ("rev1", "rev2"):
        human = Annotator.for_user(make_user(name, "reviewer"))
        label_everything([image], human, lambda i, k: 1.0 if k in ("biometrics", "gender") else 0.0)
        Labeling.objects.create(image=image, annotator=human, status=Labeling.STATUS_SUBMITTED)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set(models[:2])
    recompute_scores(profile)
    make_user("ada", "adjudicator")

    page = journey.page_for("ada")
    journey.visit(page, f"/scoring/images/{image.pk}/review/", None, shot=False)
    assert page.locator("table.review thead th").count() >= 6 + 4  # attribute, six annotators, consensus, adjudication, set
    buttons = page.locator("table.review button", has_text="Set")
    assert buttons.count() == len(taxonomy.active().keys)
    for i in (0, buttons.count() - 1):
        button = buttons.nth(i)
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box and 0 <= box["x"] and box["x"] + box["width"] <= 1280, box
        # Nothing covers it: the point at its centre belongs to the button.
        assert page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('button')?.textContent.trim()",
                             [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]) == "Set"
    page.evaluate("window.scrollTo(0, 0)")
    journey.shot(page, "paths-review-six-annotators", docs="review")
    # And it works from there: the last attribute's final label is set.
    last = taxonomy.active().keys[-1]
    row = page.locator("tr", has=page.locator(f"input[name=attribute][value={last}]"))
    row.locator("select[name=value]").select_option("1")
    with page.expect_navigation():
        row.locator("button", has_text="Set").click()
    assert Adjudication.objects.get(image=image, attribute__key=last).value == 1.0
    journey.check(page)


def test_skip_then_the_queue_page(journey, make_image):
    make_image("2017_86_a")
    make_image("2017_86_b", color=(20, 120, 200))
    make_user("rita", "reviewer")
    page = journey.page_for("rita")
    journey.visit(page, "/label/", None, shot=False)
    with page.expect_navigation():
        page.click("text=Next image")
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")
    labeling_id = int(re.search(r"/labelings/(\d+)/", page.url).group(1))
    page.keyboard.press("y")  # one answer: skipping asks first
    page.wait_for_selector("#labeling-form[data-save-state=saved]", state="attached")
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.keyboard.press("k")
    assert Labeling.objects.get(pk=labeling_id).status == Labeling.STATUS_SKIPPED

    journey.visit(page, "/label/", None, shot=False)
    journey.shot(page, "paths-queue-after-skip", docs="queue")
    assert page.title() == "Label · CPRT Workbench"
    # The skipped list is in the page's content only: nothing between <body> and the top bar, nothing in <head>.
    assert page.evaluate("document.head.querySelectorAll('h2, ul, form').length") == 0
    assert page.evaluate("document.body.firstElementChild.matches('header.topbar')")
    skipped = page.locator("main ul.skipped li")
    skipped_image = Labeling.objects.get(pk=labeling_id).image.vispr_id
    assert skipped.count() == 1 and skipped_image in skipped.inner_text() and skipped_image.startswith("2017_86_")
    with page.expect_navigation():
        skipped.locator("button", has_text="reopen").click()
    assert Labeling.objects.get(pk=labeling_id).status == Labeling.STATUS_DRAFT
    assert Labeling.objects.get(pk=labeling_id).draft_values  # the answer was kept
    journey.check(page)


def _suggesting_batch(image, annotators):
    batch = Batch.objects.create(name="pilot-suggestions", show_model_suggestions=True)
    batch.suggestion_annotators.set(annotators)
    Image.objects.filter(pk=image.pk).update(batch=batch)


def test_zoom_pan_and_accept_a_suggestion_with_the_keyboard(journey, model_annotators):
    image = photos.store("2017_87_astro", photos.encoded(photos.astronaut()))
    gpt, gem = model_annotators
    first_key = taxonomy.active().keys[0]  # biometrics: both models say yes
    label_everything([image], gpt, lambda i, k: 1.0 if k in (first_key, "gender") else 0.0)
    label_everything([image], gem, lambda i, k: 1.0 if k == first_key else (0.5 if k == "gender" else 0.0))
    Label.objects.filter(image=image, annotator=gpt, attribute__key=first_key).update(rationale="a face, clearly visible")
    _suggesting_batch(image, [gpt, gem])
    make_user("zoe", "reviewer")
    Profile.objects.filter(user__username="zoe").update(blur_images_by_default=False)

    page = journey.page_for("zoe")
    journey.visit(page, "/label/", None, shot=False)
    with page.expect_navigation():
        page.click("text=Next image")
    page.wait_for_selector("html[data-labeling-ready='1']", state="attached")
    labeling = Labeling.objects.get(image=image, annotator__user__username="zoe")

    # One suggestion row per attribute, who said what on hover.
    rows = page.locator(".q-row")
    assert page.locator(".q-row .suggestion").count() == rows.count() == len(taxonomy.active().keys)
    first = page.locator(f".q-row[data-key={first_key}] .suggestion")
    assert "Yes" in first.inner_text() and "2 of 2 models" in first.inner_text()
    title = first.get_attribute("title")
    assert "openai/gpt-5.1" in title and "gemini/gemini-3-flash" in title and "a face, clearly visible" in title
    gender = page.locator(".q-row[data-key=gender] .suggestion")
    assert "Unsure" in gender.inner_text()  # one yes, one unsure: a tie is Unsure

    # a accepts the suggestion of the current (first) question and moves on; the draft saves it as the reviewer's.
    page.keyboard.press("a")
    assert page.locator(f"input[name=value-{first_key}][value='1']").is_checked()
    page.wait_for_selector("#labeling-form[data-save-state=saved]", state="attached")
    labeling.refresh_from_db()
    assert labeling.draft_values.get(first_key) in (1, 1.0, "1")

    # Zoom with + and -, pan with Shift+arrows, back to the whole image with x; the buttons do the same.
    img = page.locator("#labeling-image")
    page.keyboard.press("+")
    page.keyboard.press("+")
    assert img.get_attribute("data-zoom") == "1.56" and page.inner_text("[data-zoom-level]") == "156%"
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("Shift+ArrowUp")
    assert int(img.get_attribute("data-pan-x")) > 0 and int(img.get_attribute("data-pan-y")) > 0
    journey.shot(page, "paths-labeling-zoomed", docs="labeling")
    page.keyboard.press("-")
    assert img.get_attribute("data-zoom") == "1.25"
    page.keyboard.press("x")
    assert img.get_attribute("data-zoom") == "1.00" and img.get_attribute("data-pan-x") == "0"
    page.click("[data-action=zoom-in]")
    assert img.get_attribute("data-zoom") == "1.25"
    page.click("[data-action=zoom-reset]")
    assert img.get_attribute("data-zoom") == "1.00"
    journey.check(page)


def test_images_page_filters_and_search(journey, make_image):
    a = make_image("2017_88_train", split="train")
    b = make_image("2017_88_test", split="test", color=(10, 200, 10))
    make_image("2018_88_other", split="other", color=(10, 10, 200))
    Image.objects.filter(pk=a.pk).update(vispr_labels=["a17_color", "a4_gender"])
    Image.objects.filter(pk=b.pk).update(vispr_labels=["a4_gender"])
    make_user("ada", "adjudicator")
    page = journey.page_for("ada")
    journey.visit(page, "/", None, shot=False)
    assert page.locator("figure.tile").count() == 3

    page.select_option("select[name=split]", "test")
    with page.expect_navigation():
        page.click(".image-filters button[type=submit]")
    assert [t.get_attribute("data-vispr-id") for t in page.locator("figure.tile").all()] == ["2017_88_test"]
    assert "1 image matches these filters" in page.inner_text("main")

    page.select_option("select[name=split]", "")
    page.fill("input[name=vispr_label]", "a4_gender")
    page.fill("input[name=q]", "2017_88")
    with page.expect_navigation():
        page.press("input[name=q]", "Enter")
    assert sorted(t.get_attribute("data-vispr-id") for t in page.locator("figure.tile").all()) == ["2017_88_test", "2017_88_train"]
    journey.shot(page, "paths-images-filtered", docs="images")

    page.fill("input[name=vispr_label]", "a4 gender; drop")
    with journey.expect_status(400):
        with page.expect_navigation():
            page.click(".image-filters button[type=submit]")
        assert "VISPR label" in page.inner_text(".card.error") and page.locator("figure.tile").count() == 0
    with page.expect_navigation():
        page.click("text=clear filters")
    assert page.locator("figure.tile").count() == 3
    journey.check(page)


def test_preferences_page_has_every_preference(journey):
    make_user("rita", "reviewer")
    page = journey.page_for("rita")
    journey.visit(page, "/account/preferences", "paths-preferences")
    stay = page.locator("input[name=stay_after_submit]")
    assert stay.count() == 1 and not stay.is_checked()
    stay.check()
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert Profile.objects.get(user__username="rita").stay_after_submit
    assert Profile.objects.get(user__username="rita").blur_images_by_default  # the other one kept its value
    journey.visit(page, "/account/preferences", None, shot=False)
    assert page.locator("input[name=stay_after_submit]").is_checked()
    journey.check(page)


def test_no_page_scrolls_sideways_at_800_px(journey, openai_server, make_image, model_annotators):
    """A run against the fake provider shows its stand-in badge; the main pages fit 800 px."""
    # ten images: the leaderboard ranks nothing on a common set under ten (scoring.ranking.MIN_COMMON)
    images = [make_image(f"2017_89_{i}", color=(20 * i, 90, 160)) for i in range(10)]
    gpt, gem = model_annotators
    label_everything(images, gpt, lambda i, k: 1.0 if k in DISPUTES[i % len(DISPUTES)] else 0.0)
    # the odd images agreed on, so the ground truth varies (a constant one leaves Pearson undefined: nothing ranked)
    label_everything(images, gem, lambda i, k: 1.0 if i % 2 and k in DISPUTES[i % len(DISPUTES)] else 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    admin = make_user("root", "admin")
    form = LaunchForm({"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "split": "all", "concurrency": "2"})
    assert form.is_valid(), form.errors
    run = launching.launch_run(admin, form.spec(), send=False)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.stand_in and run.strategy == "taxonomy"

    page = journey.page_for("root")
    journey.visit(page, "/runs/", None, shot=False)
    assert page.locator("table.runs .badge.stand-in").count() == 1
    journey.shot(page, "paths-runs", docs="runs")
    journey.visit(page, f"/runs/{run.pk}/", None, shot=False)
    assert "stand-in" in page.inner_text("main") and run.endpoint in page.locator(".badge.stand-in").get_attribute("title")
    journey.visit(page, "/scoring/", None, shot=False)
    assert page.locator("#table-leaderboard .badge.stand-in").count() == 1  # the leaderboard carries the badge
    journey.shot(page, "paths-leaderboard", docs="leaderboard")
    journey.visit(page, "/scoring/agreement/", None, shot=False)
    journey.shot(page, "paths-agreement", docs="agreement")
    journey.visit(page, "/api/", None, shot=False)
    assert "/api/images/" in page.inner_text("table.api-index")
    journey.shot(page, "paths-api", docs="api")

    page.set_viewport_size({"width": 800, "height": 900})
    narrow = page
    for path in ("/", "/runs/", f"/runs/{run.pk}/", "/runs/new/", "/scoring/", f"/scoring/runs/{run.pk}/", "/scoring/exports/",
                 "/scoring/agreement/", "/scoring/disagreements/", f"/images/{images[0].pk}/history", "/api/",
                 f"/scoring/images/{images[0].pk}/review/", "/benchmarks/local-classifiers/classifiers/", "/benchmarks/spy-bench/",
                 "/scoring/binary/", "/benchmarks/local-classifiers/",
                 "/benchmarks/multipriv/", "/runs/new/?task=spy-bench", "/runs/new/?task=multipriv-reid"):
        journey.visit(narrow, path, None, shot=False)
        assert narrow.evaluate(OVERFLOW) <= 0, f"{path} scrolls sideways at 800 px"
    # The long agreement page folds its biggest tables; a link to one opens it.
    journey.visit(narrow, "/scoring/agreement/#table-per_attribute", None, shot=False)
    assert narrow.evaluate("document.getElementById('table-per_attribute').open")
    journey.shot(narrow, "paths-agreement-800")
    journey.check(narrow)
