"""The seam through which a run's image selection filters on consensus, which scoring owns.

Scoring registers a filter from its AppConfig.ready(): given an image queryset and the selection's
consensus criteria (attribute = value, level), it returns the narrowed queryset and the label of
the profile used. Without one, a selection on consensus is refused.
"""
from __future__ import annotations

from collections.abc import Callable

_consensus_filter: Callable | None = None


def register_consensus_filter(function: Callable) -> None:
    global _consensus_filter
    _consensus_filter = function


def filter_by_consensus(images, *, attribute: str, attribute_value: int, level: int | None):
    """(images narrowed to those whose consensus matches, the profile's label)."""
    if _consensus_filter is None:
        raise RuntimeError("No consensus filter registered (is the scoring app installed?).")
    return _consensus_filter(images, attribute=attribute, attribute_value=attribute_value, level=level)
