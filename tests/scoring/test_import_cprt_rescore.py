"""A re-import that moves a profile's boundaries rescores every stored score under it, not only the
images in the new file."""
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
def test_reimport_with_new_boundaries_rescores_images_outside_the_file(tmp_path):
    run(write_jsonl(tmp_path / "first.jsonl", make_rows(200)), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert ImageScore.objects.filter(profile=profile).count() == 200
    # Same images and labels, scores published under other boundaries; only the first half in the file.
    run(write_jsonl(tmp_path / "second.jsonl", make_rows(200, bounds=OTHER_BOUNDS)[:100]), "--split", "test")
    profile.refresh_from_db()
    assert (profile.lo1, profile.lo2, profile.lo3) == pytest.approx(OTHER_BOUNDS.lo[:3], abs=1e-5)
    scores = list(ImageScore.objects.filter(profile=profile))
    assert len(scores) == 200
    for stored in scores:  # the 100 images not in the second file included
        assert stored.score == pytest.approx(engine.severity(stored.counts, profile.bounds)[1], abs=1e-9)
