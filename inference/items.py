"""A run's items still to do: the one question every resume, reconcile and finish asks.

Items are the run's units of work, their ids defined by its kind at launch (`Run.item_ids`,
inference.kinds.base). This lives beside the models, not on `Run`, because only the kind knows
whether an item's data still exists.
"""
from __future__ import annotations

from . import kinds
from .models import Run


def missing_item_ids(run: Run) -> list[int]:
    """The run's items that still exist (their kind says) and have no result yet: what a resume
    re-dispatches, and what keeps the run from finishing."""
    wanted = set(run.item_ids) - set(run.results.values_list("item_id", flat=True))
    if not wanted:
        return []
    return sorted(kinds.get(run.task)(run).existing(sorted(wanted)))
