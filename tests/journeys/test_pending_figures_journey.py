"""Journey: figures never computed before, at scale (issue 29). An adjudicator opens the leaderboard and a
run's page; the pages answer "Computing the figures" at once (202) instead of computing inside the
request, a real worker runs the refresh jobs, and each page reloads itself into its figures.

CPRT_METRICS_INLINE_ROWS=0 stands in for 100,000 images: every first computation counts as large.
Debian's Chromium through Playwright (sync API) against live_server; screenshots in test-artifacts/journeys/.
"""
from __future__ import annotations

import pytest

from scoring.models import ComputedMetrics
from scoring.services.cache import PENDING
from tests.conftest import make_user
from tests.support.permission_cases.scoring import add_results, make_images, make_run
from tests.support.workers import celery_worker, purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_pages_say_computing_then_reload_into_their_figures(journey, settings):
    settings.CPRT_METRICS_INLINE_ROWS = 0
    make_user("pending-staff", "adjudicator")
    images = make_images(30, prefix="2017_83")
    runs = []
    for k, shift in enumerate((0.02, 0.1)):
        run = make_run(strategy="taxonomy", model=f"pending-journey-{k}")
        add_results(run, [(i, "ok", min(1.0, i.published_score + shift)) for i in images])
        runs.append(run)
    purge_broker()

    page = journey.page_for("pending-staff")
    response = journey.visit(page, "/scoring/", "pending-leaderboard", status=202)
    assert response.headers["retry-after"] == "5"
    text = page.inner_text("main")
    assert "Computing the figures" in text and "the leaderboard's ranking" in text and "a run's metrics" in text
    assert set(ComputedMetrics.objects.values_list("fingerprint", flat=True)) == {PENDING}
    with celery_worker(queues="default", concurrency=1):
        # The page reloads itself (every 5 s) until the jobs have stored the figures.
        page.locator("#table-leaderboard").wait_for(timeout=120_000)
        ranked = page.inner_text("#table-leaderboard")
        assert f"#{runs[0].pk}" in ranked and f"#{runs[1].pk}" in ranked
        journey.shot(page, "pending-leaderboard-done")

        journey.visit(page, f"/scoring/runs/{runs[0].pk}/", "pending-run", status=202)
        assert "a run's charts" in page.inner_text("main")
        page.locator("h1", has_text=f"Run #{runs[0].pk}").wait_for(timeout=120_000)
        assert page.locator("svg title", has_text="Predicted vs ground-truth score").count() == 1  # the scatter chart
        journey.shot(page, "pending-run-done")
    assert PENDING not in set(ComputedMetrics.objects.values_list("fingerprint", flat=True))
    journey.check(page)
