"""Fixtures of the scoring tests: the export tests' world and export folder, and a small world of
scored train and test images for the SFT export."""
from __future__ import annotations

import pytest

from scoring.models import ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support.exports import build_world

# vispr id -> consensus attributes (both model annotators say 1)
SFT_TRAIN = {"2017_101": {"biometrics": 1, "age": 1}, "2017_102": {"full_legal_name": 1}, "2017_103": {},
             "2017_104": {"documents": 1, "location": 1, "gender": 1}}
SFT_TEST = {"2017_201": {"gov_ids": 1}, "2017_202": {"gender": 1}}


@pytest.fixture
def world(db, make_image, set_labels):
    """The export tests' images, labels and scoring profile (tests.support.exports.build_world); a
    test module with a world of its own overrides it."""
    return build_world(make_image, set_labels)


@pytest.fixture
def export_root(settings, tmp_path):
    """CPRT_EXPORT_ROOT under tmp_path, served like the real one."""
    root = tmp_path / "exports"
    settings.CPRT_EXPORT_ROOT = root
    settings.CPRT_PROTECTED_ROOTS = {**settings.CPRT_PROTECTED_ROOTS, "exports": root}
    return root


@pytest.fixture
def sft_world(db, make_image, set_labels, model_annotators):
    """A provisional profile over two model annotators; four scored train images, one unscored, two scored test images."""
    profile = ScoringProfile.objects.create(name="models", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test profile",
                                            weights=[330, 30, 5, 1])
    profile.consensus_annotators.set(model_annotators)
    for number, (split, rows) in enumerate([("train", SFT_TRAIN), ("test", SFT_TEST)]):
        for index, (vispr_id, present) in enumerate(rows.items()):
            image = make_image(vispr_id, split=split, color=(40 * number + 10 * index, 90, 200))
            for annotator in model_annotators:
                set_labels(image, annotator, present)
    make_image("2017_105", split="train", color=(1, 1, 1))  # no labels: skipped and counted
    recompute_scores(profile)
    return profile


@pytest.fixture
def sft_export_root(export_root):
    return export_root
