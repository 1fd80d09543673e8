"""Issue 35's journey in Chromium: with every benchmark's data in place (CPRT images, a SPY-Bench set,
MultiPriv persons, a local classifier, a small VISPR release), an admin opens /runs/new/?task=KEY for every registered kind,
launches it with the page's defaults (the kind preselected, an available provider and its model, the
kind's own fields prefilled), opens "Metrics of this run" (the kind's own figures page) and sees the
provenance badge of a stand-in run. Choosing another kind swaps in only its fields. At 800 px no page of
these benchmarks scrolls sideways."""
from __future__ import annotations

import json
import re
import tempfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from benchmarks.multipriv.importer import import_multipriv
from benchmarks.multipriv.demo import write_release
from inference import kinds
from inference.models import Run
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.inference.spy.conftest import DOCTOR, LABEL2TEXT, SOCIAL, bench_item
from tests.support.classifiers import tiny_classifier
from tests.support.vispr_release import write_release as write_vispr_release

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def _data(make_image, settings, tmp_path) -> list:
    images = [make_image(f"2017_3535{k:04d}", color=(40 * k, 120, 200)) for k in range(4)]
    bench, l2t = tmp_path / "bench.json", tmp_path / "label2text.json"
    bench.write_text(json.dumps({"benchmark_list": [
        bench_item(1, "a4_gender", images[0].vispr_id, privacy=[("s1_doctor", DOCTOR)], non_privacy=[("s3_social", SOCIAL)]),
        bench_item(2, "a31_passport", images[1].vispr_id, privacy=[("s1_doctor", DOCTOR)], question="What is the passport number?")]}))
    l2t.write_text(json.dumps(LABEL2TEXT))
    call_command("spy_import", str(bench), "--label2text", str(l2t), "--name", "tiny", stdout=StringIO())
    with tempfile.TemporaryDirectory() as tmp:
        import_multipriv(write_release(Path(tmp)))
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    release = write_vispr_release(tmp_path / "vispr", {"test2017": {"2017_10000001": ["a4_gender"], "2017_10000002": ["a0_safe"]}})
    call_command("import_vispr", str(release), stdout=StringIO(), stderr=StringIO())
    call_command("register_classifier", "tiny-s2p", str(tiny_classifier(tmp_path / "tiny.onnx")), "--classes", "private,public",
                 stdout=StringIO())
    return images


def test_every_kind_launches_from_the_page_with_its_defaults_and_opens_its_figures(journey, make_image, openai_server, eager_celery,
                                                                                   settings, tmp_path):
    images = _data(make_image, settings, tmp_path)
    make_user("kinds-admin", "admin")
    page = journey.page_for("kinds-admin")

    # Choosing a kind swaps in its fields only (htmx GET ?task=KEY), and the URL says which.
    journey.visit(page, "/runs/new/", None, shot=False)
    page.select_option("select[name=task]", "spy-bench")
    page.wait_for_selector("#launch-form[data-kind='spy-bench']")
    assert page.locator("select[name='opt-set']").input_value() != "" and page.locator("select[name=strategy]").count() == 0
    assert page.url.endswith("?task=spy-bench")
    page.select_option("select[name=task]", "multipriv-reid")
    page.wait_for_selector("#launch-form[data-kind='multipriv-reid']")
    assert page.locator("select[name=split]").count() == 0 and page.locator("input[name='opt-limit']").count() == 1
    journey.shot(page, "launch-kind-swap-multipriv-reid")

    figures = {}
    for key in kinds.KINDS:
        journey.visit(page, f"/runs/new/?task={key}", f"launch-{key}-form")
        assert page.locator("#id_task").input_value() == key and page.locator(".kind-unavailable").count() == 0
        with page.expect_navigation():
            page.click("button[name=action][value=launch]")
        assert re.search(r"/runs/\d+/$", page.url), page.locator(".errorlist").all_inner_texts()
        run = Run.objects.get(task=key)
        assert run.status == Run.STATUS_FINISHED and run.done == run.total > 0, (key, run.status, run.error)
        with page.expect_navigation():
            page.click("a.figures-link")
        figures[key] = kinds.get(key)(run).figures_url(run)
        assert page.url.endswith(figures[key]), (key, page.url)
        if run.provenance != "real":  # the fake provider answered: the figures page says so
            assert page.locator(f"main [data-provenance='{run.provenance}']").first.is_visible(), key
        journey.shot(page, f"launch-{key}-figures")
    assert Run.objects.get(task="judge").provenance == "stand-in" and Run.objects.get(task="binary").provenance == "real"

    page.set_viewport_size({"width": 800, "height": 900})
    spy = Run.objects.get(task="spy-bench")
    paths = ["/runs/", "/benchmarks/spy-bench/", f"/runs/{spy.pk}/", "/benchmarks/local-classifiers/classifiers/", f"/images/{images[0].pk}/history",
             "/scoring/binary/", "/benchmarks/local-classifiers/", "/benchmarks/multipriv/", "/scoring/benchmarks/"]
    paths += [f"/runs/new/?task={key}" for key in kinds.KINDS] + list(figures.values())
    wide = []
    for path in paths:
        journey.visit(page, path, None, shot=False)
        if page.evaluate(OVERFLOW) > 0:
            wide.append(f"{path}: {page.evaluate(OVERFLOW)} px too wide")
            journey.shot(page, "wide-800-" + re.sub(r"\W+", "-", path).strip("-"))
    assert wide == [], "pages scroll sideways at 800 px:\n" + "\n".join(wide)
    journey.check(page)
