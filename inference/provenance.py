"""Where answers came from ("demo", "stand-in", "real"; `Run.provenance`), for pages that list
model annotators rather than runs (review columns, labeling suggestions): an annotator's labels are
as real as the least real run that wrote them."""
from __future__ import annotations

from .models import PROVENANCE_DEMO, PROVENANCE_REAL, PROVENANCE_STAND_IN, Run

ORDER = (PROVENANCE_DEMO, PROVENANCE_STAND_IN, PROVENANCE_REAL)  # the first found wins


def of_annotators(names) -> dict[str, str]:
    """annotator name -> provenance of the runs that wrote its labels ("real" for a person's name)."""
    found: dict[str, set[str]] = {}
    runs = Run.objects.filter(annotator__name__in=list(names)).only("annotator__name", "stand_in", "selection", "request_params")
    for run in runs.select_related("annotator"):
        found.setdefault(run.annotator.name, set()).add(run.provenance)
    return {name: next((p for p in ORDER if p in found.get(name, ())), PROVENANCE_REAL) for name in names}
