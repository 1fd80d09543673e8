"""The seams through which annotations shows what it does not compute.

The home page and the image API show each image's consensus level and score under the active
scoring profile. Scores belong to the scoring app, which sits above annotations, so scoring
registers a `ConsensusScores` provider here from its AppConfig.ready(); annotations only calls it.
Without a provider (scoring not installed) images simply have no score.

The labeling page badges model suggestions with where they came from ("demo", "stand-in", "real":
the runs that wrote the model annotator's labels, `inference.provenance.of_annotators`); inference
registers that function here (`register_annotator_provenance`). Without it every annotator is "real".

A reviewer's submission tells scoring, inside its transaction, which image's labels it wrote and how many
label-version writes it counted (`labels_submitted`): scoring's disagreement queues follow it per image.
Without a registered function nothing happens.
"""
from __future__ import annotations

from typing import Protocol


class ConsensusScores(Protocol):
    def active_profile(self):
        """The active scoring profile (an object with ``pk``), or None when none is active."""

    def scores_for(self, profile, image_ids) -> dict:
        """{image_id: a score row with ``level`` and ``score``} for the images scored under `profile`."""

    def filter_images(self, profile, images, *, level=None, attribute=None):
        """`images` narrowed to those whose consensus under `profile` has this level / attribute = 1."""


class _NoScores:
    def active_profile(self):
        return None

    def scores_for(self, profile, image_ids) -> dict:
        return {}

    def filter_images(self, profile, images, *, level=None, attribute=None):
        return images.none()


_provider: ConsensusScores = _NoScores()


def register_consensus_scores(provider: ConsensusScores) -> None:
    global _provider
    _provider = provider


def consensus_scores() -> ConsensusScores:
    return _provider


def _all_real(names) -> dict[str, str]:
    return {name: "real" for name in names}


_annotator_provenance = _all_real


def register_annotator_provenance(function) -> None:
    """`function(annotator names) -> {name: "demo" | "stand-in" | "real"}`."""
    global _annotator_provenance
    _annotator_provenance = function


def annotator_provenance(names) -> dict[str, str]:
    return _annotator_provenance(names)


def _nothing(image_id: int, writes: int) -> None:
    return None


_labels_submitted = _nothing


def register_labels_submitted(function) -> None:
    """`function(image_id, writes)`: called in a reviewer's submission's transaction after its labels are written."""
    global _labels_submitted
    _labels_submitted = function


def labels_submitted(image_id: int, writes: int) -> None:
    _labels_submitted(image_id, writes)
