"""`{% load provenance %}{% provenance run %}`: a run's provenance badge (demo / stand-in / nothing for real).

MINIMAL stand-in written with the VISPR attribute benchmark so its pages render; the shared version
(issue 35, the run pages' provenance) replaces this file.
"""
from django import template
from django.utils.safestring import mark_safe

register = template.Library()


def provenance_of(run) -> str:
    if (getattr(run, "selection", None) or {}).get("demo") or (getattr(run, "request_params", None) or {}).get("demo"):
        return "demo"
    return "stand-in" if getattr(run, "stand_in", False) else "real"


@register.simple_tag
def provenance(run):
    kind = provenance_of(run)
    if kind == "demo":
        return mark_safe('<span class="badge warn provenance" title="Synthetic demo data: no model was called.">demo</span>')
    if kind == "stand-in":
        return mark_safe('<span class="badge stand-in provenance" title="Replies came from a stand-in server, not the real provider: '
                           'not research results.">stand-in</span>')
    return ""
