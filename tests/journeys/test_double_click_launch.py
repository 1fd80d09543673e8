"""An impatient admin double-clicks "Launch" on /runs/new/ (and the browser submits the form again): one run,
and the page lands on it. The form's one-time submission token (core.idempotency) is what makes it one."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from inference.models import Run
from tests.conftest import make_user
from tests.fakes.fixtures import FAKE_KEY
from tests.support.workers import purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_double_clicked_launch_starts_one_run(journey, make_image, settings):
    settings.OPENAI_API_KEY = FAKE_KEY  # the launch only stores and dispatches; no worker runs it here
    for i in range(3):
        make_image(f"2017_0000300{i}", color=(40 * i, 100, 50))
    make_user("root", "admin", superuser=True)
    page = journey.page_for("root")
    journey.visit(page, "/runs/new/", "admin-run-new-double-click")
    page.select_option("select[name=task]", "judge")
    page.wait_for_selector("#launch-form[data-kind='judge']")  # the form re-renders for the chosen kind
    page.wait_for_load_state("networkidle")
    page.fill("input[name=model_name]", "gpt-5.1")
    page.select_option("select[name=strategy]", index=1)
    posts = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" and request.url.endswith("/runs/new/") else None)
    try:
        # A browser that sends the form several times at once (three POSTs of this form, one token), then the double click.
        kinds = page.evaluate("""async () => {
            const form = document.querySelector('form.launch');
            const send = () => { const body = new FormData(form); body.set('action', 'launch');
                                 return fetch(form.getAttribute('action'), {method: 'POST', body, redirect: 'manual'}).then(r => r.type); };
            return Promise.all([send(), send(), send()]);
        }""")
        assert kinds == ["opaqueredirect"] * 3  # each one redirected to a run page
        page.dblclick("button[name=action][value=launch]")
        # The second click's navigation cancels the first one's, so wait for where the page ends, not for one navigation.
        expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=30_000)
        page.wait_for_load_state("load")
        run = Run.objects.get()  # one, however many POSTs reached the server
        assert page.url.endswith(f"/runs/{run.pk}/") and len(posts) >= 4
        assert "already been submitted" in page.content()
        journey.shot(page, "admin-run-double-clicked")
    finally:
        purge_broker()
