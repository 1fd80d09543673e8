"""Server-rendered SVG charts for the scoring pages: scatter, histograms, heatmap. No JavaScript.

Every function returns an SVG string in which all text has been escaped, so views may mark it safe.
Charts carry a <title> and an aria-label for screen readers; the tables beside them hold the numbers.
"""
from __future__ import annotations

from html import escape
from typing import Sequence

LEVEL_COLOURS = {1: "#b42318", 2: "#dd6b20", 3: "#c99700", 4: "#3f7d20"}
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def _open(width: int, height: int, title: str) -> list[str]:
    t = escape(title)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{t}" class="chart">',
        f"<title>{t}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
    ]


def _axes(parts: list[str], x0, y0, w, h, x_label: str, y_label: str, x_ticks, y_ticks, x_range, y_range) -> None:
    (xmin, xmax), (ymin, ymax) = x_range, y_range
    parts.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#98a2b3"/>')
    for t in x_ticks:
        x = x0 + (t - xmin) / (xmax - xmin) * w
        parts.append(f'<line x1="{_fmt(x)}" y1="{y0 + h}" x2="{_fmt(x)}" y2="{y0 + h + 4}" stroke="#98a2b3"/>')
        parts.append(f'<text x="{_fmt(x)}" y="{y0 + h + 15}" text-anchor="middle" {FONT}>{escape(f"{t:g}")}</text>')
    for t in y_ticks:
        y = y0 + h - (t - ymin) / (ymax - ymin) * h
        parts.append(f'<line x1="{x0 - 4}" y1="{_fmt(y)}" x2="{x0}" y2="{_fmt(y)}" stroke="#98a2b3"/>')
        parts.append(f'<text x="{x0 - 6}" y="{_fmt(y + 4)}" text-anchor="end" {FONT}>{escape(f"{t:g}")}</text>')
    parts.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 30}" text-anchor="middle" {FONT}>{escape(x_label)}</text>')
    parts.append(
        f'<text x="12" y="{y0 + h / 2}" text-anchor="middle" transform="rotate(-90 12 {y0 + h / 2})" {FONT}>{escape(y_label)}</text>'
    )


def scatter(points: Sequence[tuple[float, float, int]], *, title: str, x_label: str, y_label: str,
            bounds: Sequence[float] = (), width: int = 420, height: int = 420) -> str:
    """Points (x, y, level) in [0, 1]^2, coloured by level, with the diagonal and level boundaries."""
    x0, y0, w, h = 48, 12, width - 60, height - 56
    parts = _open(width, height, title)
    ticks = [0, 0.25, 0.5, 0.75, 1]
    _axes(parts, x0, y0, w, h, x_label, y_label, ticks, ticks, (0, 1), (0, 1))
    for b in bounds:
        bx, by = x0 + b * w, y0 + h - b * h
        parts.append(f'<line x1="{_fmt(bx)}" y1="{y0}" x2="{_fmt(bx)}" y2="{y0 + h}" stroke="#e4e7ec" stroke-dasharray="3 3"/>')
        parts.append(f'<line x1="{x0}" y1="{_fmt(by)}" x2="{x0 + w}" y2="{_fmt(by)}" stroke="#e4e7ec" stroke-dasharray="3 3"/>')
    parts.append(f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0}" stroke="#667085" stroke-width="0.8"/>')
    for x, y, level in points:
        cx, cy = x0 + min(max(x, 0), 1) * w, y0 + h - min(max(y, 0), 1) * h
        parts.append(f'<circle cx="{_fmt(cx)}" cy="{_fmt(cy)}" r="2.2" fill="{LEVEL_COLOURS.get(int(level), "#667085")}" fill-opacity="0.55"/>')
    legend_x = x0 + 8
    for i, level in enumerate((1, 2, 3, 4)):
        parts.append(f'<circle cx="{legend_x + i * 62}" cy="{y0 + 10}" r="4" fill="{LEVEL_COLOURS[level]}"/>')
        parts.append(f'<text x="{legend_x + i * 62 + 7}" y="{y0 + 14}" {FONT}>level {level}</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(counts: Sequence[int], edges: Sequence[float], *, title: str, x_label: str, y_label: str = "images",
              colour: str = "#2456c7", width: int = 420, height: int = 220, marker: float | None = None) -> str:
    """Bars for numpy-style (counts, edges); optional vertical marker line (e.g. at zero)."""
    x0, y0, w, h = 48, 12, width - 60, height - 56
    parts = _open(width, height, title)
    lo, hi = float(edges[0]), float(edges[-1])
    top = max(max(counts, default=0), 1)
    step = (hi - lo) / 4
    _axes(parts, x0, y0, w, h, x_label, y_label, [lo + i * step for i in range(5)], [0, top], (lo, hi), (0, top))
    for count, left, right in zip(counts, edges[:-1], edges[1:]):
        if not count:
            continue
        bx = x0 + (left - lo) / (hi - lo) * w
        bw = (right - left) / (hi - lo) * w
        bh = count / top * h
        parts.append(
            f'<rect x="{_fmt(bx + 0.5)}" y="{_fmt(y0 + h - bh)}" width="{_fmt(max(bw - 1, 0.5))}" height="{_fmt(bh)}" fill="{colour}">'
            f"<title>{escape(f'{left:.3g} to {right:.3g}: {count}')}</title></rect>"
        )
    if marker is not None and lo <= marker <= hi:
        mx = x0 + (marker - lo) / (hi - lo) * w
        parts.append(f'<line x1="{_fmt(mx)}" y1="{y0}" x2="{_fmt(mx)}" y2="{y0 + h}" stroke="#111827" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    return "".join(parts)


def heatmap(row_names: Sequence[str], col_names: Sequence[str], matrix: Sequence[Sequence[float | None]], *,
            title: str, vmin: float = -1.0, vmax: float = 1.0, cell: int = 56, scale_label: str = "value") -> str:
    """A value grid (e.g. Cohen's kappa per annotator pair) with a diverging colour scale and its legend.

    Colours run red (vmin) - white (the midpoint) - blue (vmax); every cell also prints its value,
    so the chart reads without colour. Column names are written diagonally, long names shortened
    with an ellipsis (the full name is in the cell's tooltip and the tables).
    """
    short_rows = distinct_short(row_names)
    short_cols = distinct_short(col_names)
    label_w = 16 + 8 * max((len(n) for n in short_rows), default=4)
    label_h = 20 + int(5.2 * max((len(n) for n in short_cols), default=4))
    legend_h = 58
    width = label_w + cell * len(col_names) + 16
    # Diagonal column names reach right of their column (cos 40° of ~7 px a character), and the legend's
    # caption sits right of its bar: make room for both so no label is clipped.
    longest_col = max((len(n) for n in short_cols), default=4)
    width = max(width, label_w + cell * max(len(col_names) - 1, 0) + cell / 2 + 5.4 * longest_col + 12)
    width = max(width, label_w + 250 + 7 * (len(scale_label) + 24))
    width = int(width)
    height = label_h + cell * len(row_names) + legend_h
    parts = _open(width, height, title)
    font = 'font-family="system-ui, sans-serif" font-size="13"'
    for j, name in enumerate(short_cols):
        x = label_w + j * cell + cell / 2
        parts.append(f'<text x="{_fmt(x)}" y="{label_h - 8}" transform="rotate(-40 {_fmt(x)} {label_h - 8})" {font}>'
                     f'{escape(name)}<title>{escape(col_names[j])}</title></text>')
    for i, name in enumerate(short_rows):
        y = label_h + i * cell
        parts.append(f'<text x="{label_w - 8}" y="{_fmt(y + cell / 2 + 4)}" text-anchor="end" {font}>{escape(name)}'
                     f'<title>{escape(row_names[i])}</title></text>')
        for j, value in enumerate(matrix[i]):
            x = label_w + j * cell
            if value is None:
                parts.append(f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="#f2f4f7"/>')
                parts.append(f'<text x="{x + (cell - 2) / 2}" y="{_fmt(y + cell / 2 + 4)}" text-anchor="middle" fill="#667085" {font}>–</text>')
                continue
            frac = min(max((value - vmin) / (vmax - vmin), 0.0), 1.0)
            fill = _diverging(frac)
            ink = "#fff" if abs(frac - 0.5) > 0.33 else "#111827"
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{fill}">'
                f"<title>{escape(f'{row_names[i]} / {col_names[j]}: {value:.3f}')}</title></rect>"
            )
            parts.append(f'<text x="{x + (cell - 2) / 2}" y="{_fmt(y + cell / 2 + 4)}" text-anchor="middle" fill="{ink}" {font}>{value:.2f}</text>')
    # Colour scale
    y0 = label_h + cell * len(row_names) + 18
    bar_w, steps = 240, 24
    for k in range(steps):
        parts.append(f'<rect x="{_fmt(label_w + k * bar_w / steps)}" y="{y0}" width="{_fmt(bar_w / steps + 0.5)}" height="12" '
                     f'fill="{_diverging((k + 0.5) / steps)}"/>')
    parts.append(f'<rect x="{label_w}" y="{y0}" width="{bar_w}" height="12" fill="none" stroke="#98a2b3"/>')
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + frac * bar_w
        v = vmin + frac * (vmax - vmin)
        parts.append(f'<line x1="{_fmt(x)}" y1="{y0 + 12}" x2="{_fmt(x)}" y2="{y0 + 16}" stroke="#475467"/>')
        parts.append(f'<text x="{_fmt(x)}" y="{y0 + 29}" text-anchor="middle" {FONT}>{v:g}</text>')
    parts.append(f'<text x="{label_w + bar_w + 10}" y="{y0 + 11}" {FONT}>{escape(scale_label)}; grey: no shared items</text>')
    parts.append("</svg>")
    return "".join(parts)


def _short(name: str, limit: int = 22) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def distinct_short(names: Sequence[str], limit: int = 22) -> list[str]:
    """Names shortened to `limit` characters that stay told apart: cut at the end when that keeps them
    distinct, else in the middle (names of one model often differ only at the end, e.g. "...@v1" and
    "...@v1-annotate"), else numbered."""
    short = [_short(n, limit) for n in names]
    if len(set(short)) == len(short):
        return short
    head = (limit - 1) // 2
    tail = limit - 1 - head
    short = [n if len(n) <= limit else n[:head] + "…" + n[-tail:] for n in names]
    if len(set(short)) == len(short):
        return short
    return [f"{i + 1}. {s}" if short.count(s) > 1 else s for i, s in enumerate(short)]


def _diverging(frac: float) -> str:
    """Red (0) - white (0.5) - blue (1)."""
    if frac < 0.5:
        start, end, t = (180, 35, 24), (255, 255, 255), frac / 0.5
    else:
        start, end, t = (255, 255, 255), (23, 60, 150), (frac - 0.5) / 0.5
    r, g, b = (round(a + (e - a) * t) for a, e in zip(start, end))
    return f"#{r:02x}{g:02x}{b:02x}"


def diverging_bars(items: Sequence[tuple[str, float | None]], *, title: str, x_label: str, limit: float | None = None,
                   intervals: Sequence[tuple[float | None, float | None]] | None = None) -> str:
    """Horizontal bars left (negative, blue) or right (positive, red) of a zero line, one per label;
    values are shares (0.12 = 12 points) and printed beside each bar. `intervals` (lo, hi) per item
    are drawn as a dark whisker across the bar."""
    intervals = list(intervals or [(None, None)] * len(items))
    values = [v for _, v in items if v is not None] + [e for lo_hi in intervals for e in lo_hi if e is not None]
    limit = limit or max([0.1] + [abs(v) for v in values])
    # pad: room for a value printed left of the longest negative bar, clear of the names.
    row_h, label_w, bar_w, pad = 22, 190, 460, 48
    width, height = label_w + pad + bar_w + 70, 34 + row_h * len(items) + 40
    parts = _open(width, height, title)
    font = 'font-family="system-ui, sans-serif" font-size="12"'
    zero = label_w + pad + bar_w / 2
    for i, (name, value) in enumerate(items):
        y = 26 + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end" {font}>{escape(_short(name, 26))}</text>')
        if value is None:
            parts.append(f'<text x="{_fmt(zero + 6)}" y="{y + 14}" fill="#667085" {font}>no shared images</text>')
            continue
        length = abs(value) / limit * (bar_w / 2)
        x = zero if value >= 0 else zero - length
        colour = "#b42318" if value > 0 else "#1d4ed8"
        parts.append(f'<rect x="{_fmt(x)}" y="{y + 3}" width="{_fmt(max(length, 1))}" height="{row_h - 7}" fill="{colour}">'
                     f"<title>{escape(f'{name}: {100 * value:+.1f} points')}</title></rect>")
        lo, hi = intervals[i]
        if lo is not None and hi is not None:
            x_lo, x_hi, mid = zero + lo / limit * (bar_w / 2), zero + hi / limit * (bar_w / 2), y + 3 + (row_h - 7) / 2
            parts.append(f'<line x1="{_fmt(x_lo)}" y1="{_fmt(mid)}" x2="{_fmt(x_hi)}" y2="{_fmt(mid)}" stroke="#111827" stroke-width="1.5">'
                         f"<title>{escape(f'{name}: 95% CI {100 * lo:+.1f} to {100 * hi:+.1f} points')}</title></line>")
            for xe in (x_lo, x_hi):
                parts.append(f'<line x1="{_fmt(xe)}" y1="{_fmt(mid - 4)}" x2="{_fmt(xe)}" y2="{_fmt(mid + 4)}" stroke="#111827" stroke-width="1.5"/>')
            x_end = max(x + length, x_hi) if value >= 0 else min(x, x_lo)
        else:
            x_end = x + length if value >= 0 else x
        tx = x_end + 4 if value >= 0 else x_end - 4
        anchor = "start" if value >= 0 else "end"
        parts.append(f'<text x="{_fmt(tx)}" y="{y + 14}" text-anchor="{anchor}" {font}>{100 * value:+.1f}</text>')
    bottom = 26 + row_h * len(items)
    parts.append(f'<line x1="{_fmt(zero)}" y1="20" x2="{_fmt(zero)}" y2="{bottom}" stroke="#111827"/>')
    for frac in (-1, -0.5, 0.5, 1):
        x = zero + frac * bar_w / 2
        parts.append(f'<line x1="{_fmt(x)}" y1="20" x2="{_fmt(x)}" y2="{bottom}" stroke="#e4e7ec" stroke-dasharray="3 3"/>')
        parts.append(f'<text x="{_fmt(x)}" y="{bottom + 14}" text-anchor="middle" {FONT}>{100 * frac * limit:+.0f}</text>')
    parts.append(f'<text x="{_fmt(zero)}" y="{bottom + 32}" text-anchor="middle" {FONT}>{escape(x_label)}</text>')
    parts.append(f'<text x="{label_w + pad}" y="14" {FONT} fill="#1d4ed8">← under-predicts</text>')
    parts.append(f'<text x="{label_w + pad + bar_w}" y="14" text-anchor="end" {FONT} fill="#b42318">over-predicts →</text>')
    parts.append("</svg>")
    return "".join(parts)
