"""Swagger UI (/api/docs/) in Debian's Chromium: it renders the operations under our CSP.

drf-spectacular's own template has an inline <style> and initializer; ours
(templates/drf_spectacular/swagger_ui.html) loads static/js/swagger-ui-init.js instead. Skipped without
Chromium unless CPRT_REQUIRE_BROWSER=1 (the `browser` fixture in tests/journeys/conftest.py).
"""
from __future__ import annotations

import pytest

from annotations.models import Labeling
from tests.conftest import make_user
from tests.support.browser import ARTIFACTS, log_in


@pytest.mark.django_db
def test_swagger_ui_page_has_no_inline_code(client):
    client.force_login(make_user("docs-reader", "reviewer"))
    response = client.get("/api/docs/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<style" not in html and "<script>" not in html and " style=" not in html
    assert 'src="/static/js/swagger-ui-init.js"' in html
    assert 'data-schema-url="/api/schema/"' in html and 'data-csrf-token="' in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the live server's thread shares the database
def test_swagger_ui_renders_the_operations_without_csp_violations(browser, live_server, make_image):
    image = make_image("2017_00000077")
    reader = make_user("docs-reader", "reviewer")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    console, errors = [], []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server.url, "docs-reader")

    response = page.goto(f"{live_server.url}/api/docs/")
    assert response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock-tag-section", timeout=20_000)
    page.wait_for_selector(".opblock .opblock-summary-path", timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "swagger-ui.png"), full_page=False)

    paths = page.locator(".opblock .opblock-summary-path").all_inner_texts()
    assert any("/api/images/" in path for path in paths), paths
    assert any("/api/runs/{run_id}/cancel/" in path for path in paths), paths

    # "Try it out" on a POST with the page's session: the init script must send the CSRF token.
    claim = page.locator(".opblock-post", has=page.locator(".opblock-summary-path", has_text="/api/labelings/")).filter(
        has_not_text="{labeling_id}"
    )
    claim.locator(".opblock-summary").click()
    claim.locator(".try-out__btn").click()
    claim.locator("button.execute").click()
    status = claim.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for(timeout=20_000)
    assert status.inner_text().strip() == "201", claim.locator(".live-responses-table").inner_text()
    assert Labeling.objects.get(annotator__user=reader).image_id == image.pk

    violations = [line for line in console if "Content Security Policy" in line or "Refused to" in line]
    assert not violations, violations
    assert not errors, errors
