"""The leaderboard's sections and warnings in Debian's Chromium (issue 27): the stated comparison set,
a sample run listed below the floor, ablation runs in their own section, the SFT training-overlap
warning, and the dataset-version filter submitted from the page. Screenshots go to test-artifacts/."""
from __future__ import annotations

import numpy as np
import pytest

from annotations.datasets.models import DatasetVersion
from scoring.models import ExportJob, ScoringProfile
from tests.conftest import make_user
from tests.support.browser import ARTIFACTS, log_in
from tests.support.permission_cases.scoring import add_results, make_images, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def run_over(images, model, sd, seed, **extra):
    rng = np.random.default_rng(seed)
    run = make_run(strategy="taxonomy", model=model, **extra)
    add_results(run, [(i, "ok", float(np.clip(i.published_score + rng.normal(0, sd), 0, 1))) for i in images])
    return run


def shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"leaderboard-{name}.png"), full_page=True)


def test_leaderboard_sections_warnings_and_version_filter(browser, live_server):
    make_user("board-staff", "adjudicator")
    test_images = make_images(30, prefix="2017_81")
    train_images = make_images(8, prefix="2017_82", split="train")
    strong = run_over(test_images, "strong", 0.05, 1)
    weak = run_over(test_images, "weak", 0.2, 2)
    leaky = run_over(test_images + train_images, "leaky", 0.1, 3)
    sample = run_over(test_images[:6], "sample", 0.05, 4)
    ablation = run_over(test_images, "strong", 0.1, 5, cf=True)
    ExportJob.objects.create(kind=ExportJob.KIND_SFT, options={"split": "train"}, splits=["train", "test"],
                             profile=ScoringProfile.active(), status=ExportJob.STATUS_FINISHED)
    version = DatasetVersion.objects.create(name="test-first-ten")
    version.members.set(test_images[:10])

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, live_server.url, "board-staff")
    page.goto(f"{live_server.url}/scoring/")
    assert "Comparison set:" in page.inner_text("#comparison-set")
    ranked = page.inner_text("#table-leaderboard")
    assert f"#{strong.pk}" in ranked and f"#{weak.pk}" in ranked and f"#{sample.pk}" not in ranked
    assert f"#{sample.pk}" in page.inner_text("#table-not_ranked")
    assert f"#{ablation.pk}" in page.inner_text("#table-ablations") and f"#{ablation.pk}" not in ranked
    assert page.locator("#training-overlap-warning").is_visible()
    assert page.locator(".training-overlap").count() >= 1
    assert page.locator("#table-leaderboard .ci").count() > 0  # intervals shown on the ranked table
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "sections")

    page.select_option("select[name=version]", str(version.pk))
    page.click("#leaderboard-filters button[type=submit]")
    page.wait_for_url(f"**version={version.pk}**")
    assert "test-first-ten" in page.inner_text("#comparison-set")
    ranked = page.inner_text("#table-leaderboard")
    assert f"#{sample.pk}" not in ranked and "10 images" in page.inner_text("#table-leaderboard h2")
    assert f"#{leaky.pk}" in ranked
    shot(page, "version")
