"""Browser journey: an admin imports a SPY-Bench set and results computed elsewhere from the SPY-Bench
page, launches a SPY-Bench run from /runs/new/ (the form's defaults, the set and a judge model), and
reads the leaderboard (our run beside the imported one) and the run's report. Debian's Chromium."""
from __future__ import annotations

import json
import re

import pytest

from inference.models import Run
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.inference.spy.conftest import spy_files  # noqa: F401
from tests.support.browser import ARTIFACTS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_import_launch_and_read_a_spy_bench_run(browser, live_server, openai_server, spy_files, eager_celery, tmp_path):  # noqa: F811
    make_user("boss", "admin")
    page = browser.new_page(viewport={"width": 1500, "height": 1300})
    log_in(page, live_server.url, "boss")
    page.click("nav >> a[href='/scoring/benchmarks/']")  # the top bar's Benchmarks hub, then SPY-Bench
    page.click("main >> a[href='/benchmarks/spy-bench/']")
    page.wait_for_url(re.compile(r".*/benchmarks/spy-bench/$"))

    form = page.locator("#spy-set-import")
    form.locator("input[name=name]").fill("tiny")
    form.locator("input[name=benchmark]").set_input_files(spy_files[0])
    form.locator("input[name=label2text]").set_input_files(spy_files[1])
    form.locator("button[type=submit]").click()
    page.wait_for_selector("text=Imported SPY-Bench set 'tiny': 2 items.")

    evaluated = tmp_path / "paper.jsonl"
    evaluated.write_text("".join(json.dumps({"benchmark_id": 1, "label": "a4_gender", "is_privacy": p, "eval_resp": v}) + "\n"
                                 for p, v in ((1, "respond"), (0, "respond"))))
    form = page.locator("#spy-results-import")
    form.locator("input[name=name]").fill("paper run")
    form.locator("input[name=model_name]").fill("qwen-paper")
    form.locator("input[name=evaluated]").set_input_files(str(evaluated))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("text=Imported 2 evaluated rows as 'paper run'.")

    page.goto(f"{live_server.url}/runs/new/")
    page.select_option("select[name=task]", "spy-bench")
    page.wait_for_selector("#launch-form[data-kind='spy-bench']")  # the form re-renders for the chosen kind
    page.wait_for_load_state("networkidle")
    page.fill("input[name=model_name]", "gpt-answer")
    assert page.locator("select[name=opt-set] option:checked").inner_text() == "tiny"  # the one set is preselected
    page.fill("input[name=opt-judge_model]", "gpt-judge")
    page.evaluate("""() => { const s = document.querySelector('select[name=attribute_value]');
                             if (![...s.options].some(o => o.value === '')) s.add(new Option('—', ''), 0); s.value = ''; }""")
    page.screenshot(path=str(ARTIFACTS / "spy-1-launch-form.png"), full_page=True)
    page.click("button[value=launch]")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run = Run.objects.get()
    assert run.task == "spy-bench" and run.options["judge_model"] == "gpt-judge"
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.done == 9, (run.status, run.done, run.error)

    page.click("nav >> a[href='/scoring/benchmarks/']")
    page.click("main >> a[href='/benchmarks/spy-bench/']")
    page.wait_for_selector("table.spy-leaderboard")
    board = page.inner_text("table.spy-leaderboard")
    assert "gpt-answer" in board and "gpt-judge" in board and "qwen-paper" in board and "imported" in board and "75.0 [" in board
    page.screenshot(path=str(ARTIFACTS / "spy-2-leaderboard.png"), full_page=True)
    page.click(f"text=#{run.pk}")
    page.wait_for_selector("text=Per scenario")
    assert "a31_passport" in page.inner_text("body")
    page.screenshot(path=str(ARTIFACTS / "spy-3-run-report.png"), full_page=True)
    page.goto(f"{live_server.url}/benchmarks/spy-bench/")
    page.click("text=paper run")
    page.wait_for_selector("text=answered where the user asked for privacy (1)")
    page.screenshot(path=str(ARTIFACTS / "spy-4-imported-report.png"), full_page=True)
