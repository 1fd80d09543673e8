"""Template filters for the scoring pages: one formatter for every table cell."""
from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from scoring.tables import Link, PValue, is_interval

register = template.Library()
DASH = mark_safe('<span class="muted">—</span>')
PUBLISHED = mark_safe('<td><span class="badge published">published</span></td>')


def _number(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, PValue):
        return f"{value:.3f}" if value >= 0.001 or value == 0 else f"{value:.1e}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


LIST_SHOWN = 2  # items of a list cell shown before "+N more"


@register.filter
def cell(value):
    """Format one table value: intervals as 'v [lo, hi]', floats to 3 places, links, lists, None as —."""
    if value is None or value == "":
        return DASH
    if is_interval(value):
        if value["value"] is None:
            return DASH
        if value["lo"] is None:
            return _number(value["value"])
        return format_html('{} <span class="ci">[{}, {}]</span>', _number(value["value"]), _number(value["lo"]), _number(value["hi"]))
    if isinstance(value, Link):
        return format_html('<a href="{}">{}</a>', value.url, value.text)
    if isinstance(value, (list, tuple)):
        if not value:
            return DASH
        if len(value) > LIST_SHOWN:
            # A long list folds: its first items, then the rest on a click (no wall of text in a table cell).
            return format_html('{} <details class="more"><summary>+{} more</summary>{}</details>',
                               format_html_join(", ", "{}", ((cell(v),) for v in value[:LIST_SHOWN])), len(value) - LIST_SHOWN,
                               format_html_join(", ", "{}", ((cell(v),) for v in value[LIST_SHOWN:])))
        return format_html_join(", ", "{}", ((cell(v),) for v in value))
    return _number(value)


@register.filter
def table_rows(table):
    """Every <tr> of a scoring.tables.Table in one pass (much faster than a template loop per cell)."""
    out = []
    for row in table.cells():
        published = bool(row) and row[0] == "published"
        cells = []
        for value in row:
            if value == "published":
                cells.append(PUBLISHED)
            elif is_numeric(value):
                cells.append(format_html('<td class="num">{}</td>', cell(value)))
            else:
                cells.append(format_html("<td>{}</td>", cell(value)))
        out.append(format_html('<tr{}>{}</tr>', mark_safe(' class="published"') if published else "", mark_safe("".join(cells))))
    if not out:
        out.append(format_html('<tr><td colspan="{}" class="muted">Nothing to show.</td></tr>', len(table.columns)))
    return mark_safe("\n".join(out))


@register.filter
def is_numeric(value) -> bool:
    return ((isinstance(value, (int, float)) and not isinstance(value, bool)) or is_interval(value)
            or (isinstance(value, str) and value.startswith("< 1/")))  # a resampling p-value bound


@register.filter
def point(value):
    """The point value of an interval ({"value", "lo", "hi"}); anything else as it is."""
    return value["value"] if is_interval(value) else value


@register.filter
def percent(value):
    if value is None:
        return "—"
    return f"{100 * value:.1f}%"


@register.filter
def pvalue(value):
    """A p-value: three decimals, or two significant digits below 0.001 (so 2e-05 does not read as 0.000)."""
    if value is None:
        return DASH
    return f"{value:.3f}" if value >= 0.001 or value == 0 else f"{value:.1e}"
