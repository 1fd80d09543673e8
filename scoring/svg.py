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
            title: str, vmin: float = -1.0, vmax: float = 1.0, cell: int = 46) -> str:
    """A value grid (e.g. Cohen's kappa per annotator pair); empty cells where a value is None."""
    label_w = min(12 + 6 * max((len(n) for n in row_names), default=4), 260)
    label_h = min(12 + 6 * max((len(n) for n in col_names), default=4), 260)
    width, height = label_w + cell * len(col_names) + 8, label_h + cell * len(row_names) + 8
    parts = _open(width, height, title)
    for j, name in enumerate(col_names):
        x = label_w + j * cell + cell / 2
        parts.append(f'<text x="{_fmt(x)}" y="{label_h - 6}" transform="rotate(-40 {_fmt(x)} {label_h - 6})" {FONT}>{escape(name)}</text>')
    for i, name in enumerate(row_names):
        y = label_h + i * cell
        parts.append(f'<text x="{label_w - 6}" y="{_fmt(y + cell / 2 + 4)}" text-anchor="end" {FONT}>{escape(name)}</text>')
        for j, value in enumerate(matrix[i]):
            x = label_w + j * cell
            if value is None:
                parts.append(f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="#f2f4f7"/>')
                continue
            frac = min(max((value - vmin) / (vmax - vmin), 0.0), 1.0)
            fill = _blue(frac)
            ink = "#fff" if frac > 0.6 else "#111827"
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{fill}">'
                f"<title>{escape(f'{row_names[i]} / {col_names[j]}: {value:.3f}')}</title></rect>"
            )
            parts.append(f'<text x="{x + (cell - 2) / 2}" y="{_fmt(y + cell / 2 + 3)}" text-anchor="middle" fill="{ink}" {FONT}>{value:.2f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _blue(frac: float) -> str:
    """White (0) to dark blue (1)."""
    start, end = (255, 255, 255), (23, 60, 150)
    r, g, b = (round(s + (e - s) * frac) for s, e in zip(start, end))
    return f"#{r:02x}{g:02x}{b:02x}"
