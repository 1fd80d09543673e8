"""Issue 13's forms submitted from the page in Debian's Chromium: the leaderboard filter (coverage
floor), the paired-comparison chooser and the calibration sort. Screenshots go to test-artifacts/."""
from __future__ import annotations

import numpy as np
import pytest

from annotations.models import Annotator
from tests.conftest import make_user
from tests.support.browser import ARTIFACTS, log_in
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run, submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def judge_runs():
    images = make_images(30, prefix="2017_71")
    rng = np.random.default_rng(1)
    runs = []
    for r, refuse in enumerate((0, 0, 3)):
        run = make_run(strategy="taxonomy", model=f"judge-{r}")
        rows = [(image, "refused", None) if k < refuse else
                (image, "ok", float(np.clip(image.published_score + rng.normal(0, 0.1 * (r + 1)), 0, 1))) for k, image in enumerate(images)]
        add_results(run, rows)
        runs.append(run)
    return images, runs


def shot(page, name):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(ARTIFACTS / f"scoring-{name}.png"), full_page=True)


def no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_leaderboard_floor_and_compare_chooser(browser, live_server):
    make_user("judge-staff", "adjudicator")
    images, runs = judge_runs()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, live_server.url, "judge-staff")
    page.goto(f"{live_server.url}/scoring/")
    # Default floor 95%: the run that refused 3 of 30 images (90%) is listed, not ranked.
    assert page.locator("#table-leaderboard tbody tr").count() == 2
    assert f"#{runs[2].pk}" in page.inner_text("#table-not_ranked")
    assert no_sideways_scroll(page)
    page.click("summary:has-text('Appendix A.6')")  # the profile's weights, boundaries and the paper's two examples
    assert page.locator(".profile-detail table").is_visible() and "0.94703" in page.inner_text(".profile-detail")
    shot(page, "leaderboard-default")
    page.fill("input[name=floor]", "85")
    page.click("#leaderboard-filters button[type=submit]")
    page.wait_for_url("**floor=85**")
    assert page.locator("#table-leaderboard tbody tr").count() == 3
    assert "27 images" in page.inner_text("#table-leaderboard h2")  # the common set
    assert no_sideways_scroll(page)
    shot(page, "leaderboard-floor-85")

    page.click("text=Compare two runs on their common images")
    page.select_option("select[name=a]", str(runs[0].pk))
    page.select_option("select[name=b]", str(runs[2].pk))
    page.click("#compare-form button[type=submit]")
    page.wait_for_selector("#table-comparison")
    body = page.inner_text("body")
    assert "Common images: 27" in body and "p (paired bootstrap, two-sided, raw)" in body and "p (Holm, 14 metrics)" in body
    assert no_sideways_scroll(page)
    shot(page, "compare")


def test_calibration_sort_form(browser, live_server):
    make_user("calib-staff", "adjudicator")
    a, b = make_user("calib-a", "reviewer"), make_user("calib-b", "reviewer")
    images = make_images(10, prefix="2017_72")
    model = Annotator.objects.create(kind="model", name="model:calib", provider="openai", model_name="gpt-calib")
    for user in (a, b):
        human = Annotator.for_user(user)
        label_everything(images, human, lambda i, k: 1.0 if (k == "race_ethnicity" and i < 6) else 0.0)
        for image in images:
            submit(image, human)
    label_everything(images, model, lambda i, k: 1.0 if k == "age" else 0.0)
    run = make_run(task="annotate", annotator=model)
    run.image_ids = [i.pk for i in images]
    run.save()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, live_server.url, "calib-staff")
    page.goto(f"{live_server.url}/scoring/runs/{run.pk}/")
    page.click("text=Per-attribute calibration")
    page.wait_for_selector("#calibration-sort")
    assert "under-predict race/ethnicity" in page.inner_text("body")
    first = page.locator("#table-human_majority tbody tr").first.inner_text()
    assert first.startswith("age")  # over-prediction first: +100 points
    page.select_option("select[name=sort]", "abs")
    page.click("#calibration-sort button[type=submit]")
    page.wait_for_url("**sort=abs**")
    assert page.locator("svg.chart").count() >= 1
    assert no_sideways_scroll(page)
    shot(page, "calibration")


def test_agreement_page_sections_heatmap_and_split_form(browser, live_server):
    make_user("agree-staff", "adjudicator")
    a, b = make_user("agree-a", "reviewer"), make_user("agree-b", "reviewer")
    images = make_images(8, prefix="2017_73")
    gpt = Annotator.objects.create(kind="model", name="model:openai/gpt-5.1-a-long-model-name@annotate-v2", provider="openai", model_name="gpt-5.1")
    gem = Annotator.objects.create(kind="model", name="model:gemini/gemini-3-flash@annotate-v2", provider="gemini", model_name="gemini-3-flash")
    for user, cut in ((a, 8), (b, 5)):
        human = Annotator.for_user(user)
        label_everything(images, human, lambda i, k, cut=cut: 1.0 if (k == "age" and i < cut) else 0.0)
        for image in images:
            submit(image, human)
    label_everything(images, gpt, lambda i, k: 1.0 if k in ("age", "gender") else 0.0)
    label_everything(images, gem, lambda i, k: 0.5 if k == "age" else 0.0)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, live_server.url, "agree-staff")
    page.goto(f"{live_server.url}/scoring/agreement/")
    assert "8 of 8 images have at least two human labelings" in " ".join(page.inner_text("body").split())
    page.click("nav.page-nav >> text=Kappa heatmap")
    page.wait_for_url("**#heatmap")
    heatmap = page.locator("#heatmap svg.chart")
    assert heatmap.count() == 1 and "Cohen's κ" in heatmap.inner_html()
    box = heatmap.bounding_box()
    assert box["width"] <= 1280
    assert no_sideways_scroll(page)
    shot(page, "agreement")
    page.select_option("select[name=split]", "test")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**split=test**")
    assert page.locator("#table-summary").count() == 1


def test_counterfactual_pair_page_and_its_collapse_form(browser, live_server):
    make_user("cf-staff", "adjudicator")
    images = make_images(12, prefix="2017_75")
    base, cf = make_run(strategy="taxonomy", model="cf-judge"), make_run(strategy="taxonomy", model="cf-judge", cf=True)
    add_results(base, [(image, "ok", 0.9 - 0.02 * k) for k, image in enumerate(images)])
    add_results(cf, [(image, "ok", 0.9 - 0.02 * k - (0.6 if k < 5 else 0.1 if k < 10 else 0.0)) for k, image in enumerate(images)])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, live_server.url, "cf-staff")
    page.click("nav >> text=Counterfactual")
    page.click(f"text=#{base.pk} vs #{cf.pk}")
    page.wait_for_url(f"**base={base.pk}**")
    text = " ".join(page.inner_text("main").split())
    assert "5 collapsed" in text and "95% CI" in text
    assert "Wilcoxon signed-rank test of no change" in text and "over the 10 images whose score changed" in text
    page.fill("input[name=drop]", "0.05")  # a looser collapse: the ten images that dropped at all
    page.press("input[name=drop]", "Enter")
    page.wait_for_url("**drop=0.05**")
    assert "10 collapsed" in " ".join(page.inner_text("main").split())
    assert no_sideways_scroll(page)
    shot(page, "counterfactual")
