"""`{% load provenance %}{% provenance run %}`: the one badge that says where a run's answers came from,
on every table and page that lists runs, answers or suggestions, whatever the benchmark.

"demo" (seeded by `make demo`: no model was called), "stand-in" (the project's fake provider
answered: not research results) or nothing for a real run. It takes a Run, anything with a
`provenance` attribute or key, or a leaderboard row with `stand_in` and `demo`.
"""
from __future__ import annotations

from django import template
from django.utils.html import format_html

from inference.models import PROVENANCE_DEMO, PROVENANCE_REAL, PROVENANCE_STAND_IN

register = template.Library()

TITLES = {
    PROVENANCE_DEMO: "Demo data: seeded by the demo, no model was called; not research results.",
    PROVENANCE_STAND_IN: "Replies came from a stand-in server (the project's fake provider), not the real provider: not research results.",
}
CLASSES = {PROVENANCE_DEMO: "badge warn", PROVENANCE_STAND_IN: "badge stand-in"}


def provenance_of(obj) -> str:
    """demo | stand-in | real for a run, a row that names its run's provenance, or a row with stand_in/demo."""
    if obj is None:
        return PROVENANCE_REAL
    if isinstance(obj, str):  # a provenance already worked out (e.g. inference.provenance.of_annotators)
        return obj if obj in (PROVENANCE_DEMO, PROVENANCE_STAND_IN) else PROVENANCE_REAL
    value = getattr(obj, "provenance", None)
    if value is None and isinstance(obj, dict):
        value = obj.get("provenance")
        if value is None:
            run = obj.get("run")
            if run is not None and hasattr(run, "provenance"):
                return run.provenance
            if obj.get("demo"):
                return PROVENANCE_DEMO
            return PROVENANCE_STAND_IN if obj.get("stand_in") in (True, "yes") else PROVENANCE_REAL
    return value if value in (PROVENANCE_DEMO, PROVENANCE_STAND_IN) else PROVENANCE_REAL


@register.simple_tag
def provenance(obj) -> str:
    """The badge ("" for a real run)."""
    value = provenance_of(obj)
    if value == PROVENANCE_REAL:
        return ""
    endpoint = obj.get("endpoint", "") if isinstance(obj, dict) else getattr(obj, "endpoint", "")
    title = TITLES[value] + (f" Requests went to {endpoint}." if endpoint and value == PROVENANCE_STAND_IN else "")
    return format_html(' <span class="{}" data-provenance="{}" title="{}">{}</span>', CLASSES[value], value, title, value)
