"""Browser journey: with a VISPR release imported, an admin goes from the Benchmarks page to VISPR
attribute prediction, follows its next step to the launch form, launches a run of the kind with the
form's defaults and a model name (the fake OpenAI server answers), then reads the leaderboard (the
stand-in badge) and the run's figures. Debian's Chromium."""
from __future__ import annotations

import re

import pytest

from inference.models import Run
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.browser import ARTIFACTS, log_in

from tests.benchmarks.vispr_attributes.conftest import TEST2017, release  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_launch_and_read_a_vispr_attribute_run(browser, live_server, openai_server, release, eager_celery):  # noqa: F811
    make_user("boss", "admin")
    page = browser.new_page(viewport={"width": 1300, "height": 1100})
    log_in(page, live_server.url, "boss")
    page.click("nav >> a[href='/scoring/benchmarks/']")
    row = page.locator("table.benchmarks tr", has_text="VISPR attribute prediction")
    assert "11 VISPR attributes, 11 VISPR images" in row.inner_text()
    row.locator("a", has_text="Launch a run").click()
    page.wait_for_url(re.compile(r".*/runs/new/\?task=vispr-attributes$"))
    assert page.locator("#id_task").input_value() == "vispr-attributes"  # preselected from ?task=
    page.fill("input[name=model_name]", "gpt-vpa")
    page.select_option("select[name=split]", "test")
    page.evaluate("""() => { const s = document.querySelector('select[name=attribute_value]');
                             if (![...s.options].some(o => o.value === '')) s.add(new Option('—', ''), 0); s.value = ''; }""")
    page.click("button[value=launch]")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run = Run.objects.get()
    run.refresh_from_db()
    assert run.task == "vispr-attributes" and run.status == Run.STATUS_FINISHED and run.done == len(TEST2017), (run.status, run.error)

    page.goto(f"{live_server.url}/benchmarks/vispr-attributes/")
    page.wait_for_selector("table.vispr-leaderboard")
    board = page.inner_text("table.vispr-leaderboard")
    assert "gpt-vpa" in board and "stand-in" in board
    page.screenshot(path=str(ARTIFACTS / "vispr-attributes-1-leaderboard.png"), full_page=True)
    page.click(f"text=#{run.pk}")
    page.wait_for_selector("table.vispr-attributes")
    body = page.inner_text("body")
    assert "cmAP" in body and "a9_face_complete" in body and "stand-in" in body
    assert page.evaluate("document.documentElement.scrollWidth") <= 1300
    page.screenshot(path=str(ARTIFACTS / "vispr-attributes-2-figures.png"), full_page=True)
    page.set_viewport_size({"width": 800, "height": 1000})
    for url in ("/benchmarks/vispr-attributes/", f"/benchmarks/vispr-attributes/runs/{run.pk}/", "/scoring/benchmarks/"):
        page.goto(live_server.url + url)
        assert page.evaluate("document.documentElement.scrollWidth") <= 800, url
