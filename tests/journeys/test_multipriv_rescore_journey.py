"""MultiPriv's frozen truth in Chromium (issue 34): after a changed release is imported, the admin sees on a
finished run's page what changed while the figures stay; the Rescore form refuses without its tick, and
with it scores the run against the current data."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from benchmarks.multipriv.importer import import_multipriv
from core.models import AuditEvent
from benchmarks.multipriv.demo import seed_multipriv, write_release
from inference.models import Run
from tests.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_release_changed_notice_and_rescore(journey):
    seed_multipriv()
    run = Run.objects.get(task="multipriv-profile")
    make_user("root", "admin", superuser=True)
    page = journey.page_for("root")
    journey.visit(page, f"/benchmarks/multipriv/runs/{run.pk}/", None, shot=False)
    before = page.inner_text("table")
    assert page.locator("#release-changed").count() == 0 and "at launch" in page.inner_text("#truth-frozen")

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_release(Path(tmp))
        path = folder / "person_2" / "person_2.json"
        profile = json.loads(path.read_text(encoding="utf-8"))
        profile[0]["Name"] = "Bram O. Oakes"
        path.write_text(json.dumps(profile), encoding="utf-8")
        assert import_multipriv(folder).updated_persons == 1

    journey.visit(page, f"/benchmarks/multipriv/runs/{run.pk}/", "multipriv-release-changed")
    assert "person_2: profile changed (Name)" in page.inner_text("#release-changed")
    assert page.inner_text("table") == before  # the figures as they were

    with journey.expect_status(400), page.expect_navigation():
        page.click("#release-changed button[type=submit]")  # without the tick
    assert "Tick the confirmation" in page.inner_text("main")
    assert Run.objects.get(pk=run.pk).truth["source"] == "launch"
    journey.shot(page, "multipriv-rescore-refused")

    page.check("#release-changed input[name=confirm]")
    with page.expect_navigation():
        page.click("#release-changed button[type=submit]")
    assert page.url.endswith(f"/benchmarks/multipriv/runs/{run.pk}/")
    assert page.locator("#release-changed").count() == 0 and "when an admin rescored it" in page.inner_text("#truth-frozen")
    assert "now scored against the current imported data" in page.inner_text("body")
    assert AuditEvent.objects.filter(action="multipriv.rescore").count() == 1
    journey.shot(page, "multipriv-rescored")
    journey.check(page)
