"""A re-import is fitted with every stored row: a corrected release that moves the boundaries rescores
every stored score; a partial file that contradicts the stored rows is fitted, reported, and not activated."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from scoring import engine
from scoring.models import ImageScore, ScoringProfile
from tests.support.bench_rows import make_rows, write_jsonl

OTHER_BOUNDS = engine.Bounds((0.9, 0.7, 0.4, 0.0))


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_cprt", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_reimport_of_every_row_with_new_boundaries_rescores_every_image(tmp_path):
    run(write_jsonl(tmp_path / "first.jsonl", make_rows(200)), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert ImageScore.objects.filter(profile=profile).count() == 200
    run(write_jsonl(tmp_path / "second.jsonl", make_rows(200, bounds=OTHER_BOUNDS)), "--split", "test")
    profile.refresh_from_db()
    assert profile.is_active and not profile.provisional
    assert (profile.lo1, profile.lo2, profile.lo3) == pytest.approx(OTHER_BOUNDS.lo[:3], abs=1e-5)
    scores = list(ImageScore.objects.filter(profile=profile))
    assert len(scores) == 200
    for stored in scores:
        assert stored.score == pytest.approx(engine.severity(stored.counts, profile.bounds)[1], abs=1e-9)


@pytest.mark.django_db
def test_partial_reimport_that_contradicts_the_stored_rows_is_not_activated(tmp_path):
    run(write_jsonl(tmp_path / "first.jsonl", make_rows(200)), "--split", "test")
    # Half the images re-published under other boundaries: no profile reproduces all 200 stored rows.
    out = run(write_jsonl(tmp_path / "second.jsonl", make_rows(200, bounds=OTHER_BOUNDS)[:100]), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert not profile.is_active and profile.provisional
    assert "fitted from every stored published row of its ground truth: 200 rows (test 200)" in out
    assert "NOT reproduced" in out and "was NOT activated" in out
    assert profile.fit_report["rows"] == 200 and profile.fit_report["per_split"][0]["reproduces"] is False
    scores = list(ImageScore.objects.filter(profile=profile))
    assert len(scores) == 200
    for stored in scores:  # every stored score follows the boundaries the profile now holds
        assert stored.score == pytest.approx(engine.severity(stored.counts, profile.bounds, profile.weights)[1], abs=1e-9)
