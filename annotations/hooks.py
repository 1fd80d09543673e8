"""The seam through which annotations shows consensus scores it does not compute.

The home page and the image API show each image's consensus level and score under the active
scoring profile. Scores belong to the scoring app, which sits above annotations, so scoring
registers a `ConsensusScores` provider here from its AppConfig.ready(); annotations only calls it.
Without a provider (scoring not installed) images simply have no score.
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
