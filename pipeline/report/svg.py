"""Charts as inline SVG, written in Python: no chart library, no script, nothing fetched.

One drawing approach for the audit report (pipeline/report/charts.py) and the evaluation
report's plots (pipeline/eval/plots.py). Every chart is an `<svg role="img">` with a `<title>`
and `<desc>` (its name and text alternative), a visible title, axis labels and a legend; every
data point is one mark (`<g class="mark">`) with a `<title>` tooltip saying its value, also for
a missing value (None or NaN), which is drawn as "n/a" instead of being left out silently.

All text is XML-escaped here (route names are untrusted), so the result is safe as Markup.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")
WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 48, 64, 64  # plot margins: title and legend above, labels below
MARKERS = ("circle", "square", "diamond", "triangle")

Number = float | int | None


# Characters XML 1.0 does not allow even escaped (controls other than tab and newlines, lone
# surrogates, U+FFFE/U+FFFF): replaced, so that an untrusted route name cannot break the SVG.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _t(text: object) -> str:
    return escape(_NOT_XML.sub("\ufffd", str(text)), quote=True)


def finite(value: Number) -> bool:
    """Whether `value` is a number that can be drawn (not None, NaN or infinite)."""
    return value is not None and math.isfinite(value)


def _f(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Series:
    """A named series of a bar chart, one value per category; `low`/`high` an interval."""

    name: str
    values: Sequence[Number]
    colour: str = OKABE_ITO[0]
    low: Sequence[Number] | None = None
    high: Sequence[Number] | None = None
    texts: Sequence[str] | None = None  # printed above each bar and in its tooltip
    hatch: bool = False  # a pattern besides the colour: never colour alone


@dataclass(frozen=True)
class Line:
    """A named line of (x, y) points; `tips` the tooltip of each point."""

    name: str
    points: Sequence[tuple[Number, Number]]
    colour: str = OKABE_ITO[0]
    tips: Sequence[str] | None = None
    step: bool = False
    low: Sequence[Number] | None = None
    high: Sequence[Number] | None = None


@dataclass(frozen=True)
class Axes:
    """Axis labels, value formats and fixed ranges of a chart."""

    x_label: str = ""
    y_label: str = ""
    x_format: Callable[[float], str] = field(default=lambda v: f"{v:g}")
    y_format: Callable[[float], str] = field(default=lambda v: f"{v:g}")
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None


def percent(value: float) -> str:
    """A rate as a percentage for axes and tooltips."""
    return f"{value:.0%}"


def _span(values: list[float], fixed: tuple[float, float] | None) -> tuple[float, float]:
    if fixed is not None:
        return fixed
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return (lo - 0.5, hi + 0.5) if lo else (0.0, 1.0)
    return lo, hi


class _Frame:
    """Data to pixel coordinates of the plot area."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float]):
        self.x0, self.x1 = x
        self.y0, self.y1 = y

    def px(self, x: float) -> float:
        return LEFT + (x - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)

    def py(self, y: float) -> float:
        clipped = min(max(y, self.y0), self.y1)
        return HEIGHT - BOTTOM - (clipped - self.y0) / (self.y1 - self.y0) * (
            HEIGHT - TOP - BOTTOM)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _open(chart_id: str, title: str, description: str) -> list[str]:
    cid = _t(chart_id)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{cid}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="{cid}-t {cid}-d">',
        f'<title id="{cid}-t">{_t(title)}</title><desc id="{cid}-d">{_t(description)}</desc>',
        f'<defs><pattern id="{cid}-hatch" width="6" height="6" patternUnits="userSpaceOnUse">'
        '<path d="M0,6 L6,0" stroke="#fff" stroke-width="1.5"/></pattern></defs>',
        f'<text class="chart-title" x="8" y="22" font-size="16" font-weight="bold">'
        f'{_t(title)}</text>',
    ]


def _legend(items: list[tuple[str, str]]) -> list[str]:
    out, x = [], 8.0
    for name, colour in items:
        out.append(f'<rect x="{_f(x)}" y="36" width="12" height="12" fill="{_t(colour)}"/>'
                   f'<text x="{_f(x + 16)}" y="46" font-size="12">{_t(name)}</text>')
        x += 28 + 7 * len(name)
    return out


def _axes(frame: _Frame, axes: Axes, x_ticks: bool = True) -> list[str]:
    base = HEIGHT - BOTTOM
    out = ['<g class="axes" font-size="11" fill="#333">',
           f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#333"/>',
           f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#333"/>']
    for v in _ticks(frame.y0, frame.y1):
        y = _f(frame.py(v))
        out.append(f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#ddd"/>'
                   f'<text x="{LEFT - 4}" y="{y}" text-anchor="end" dominant-baseline="middle">'
                   f'{_t(axes.y_format(v))}</text>')
    if x_ticks:
        for v in _ticks(frame.x0, frame.x1):
            out.append(f'<text x="{_f(frame.px(v))}" y="{base + 14}" text-anchor="middle">'
                       f'{_t(axes.x_format(v))}</text>')
    out.append(f'<text class="x-label" x="{(LEFT + WIDTH - RIGHT) // 2}" y="{HEIGHT - 8}" '
               f'text-anchor="middle">{_t(axes.x_label)}</text>')
    out.append(f'<text class="y-label" transform="translate(14,{(TOP + base) // 2}) '
               f'rotate(-90)" text-anchor="middle">{_t(axes.y_label)}</text></g>')
    return out


def _whisker(x: float, frame: _Frame, low: Number, high: Number) -> str:
    if not (finite(low) and finite(high)):
        return ""
    y_lo, y_hi = _f(frame.py(low)), _f(frame.py(high))
    return (f'<path d="M{_f(x)},{y_lo} V{y_hi} M{_f(x - 4)},{y_lo} H{_f(x + 4)} '
            f'M{_f(x - 4)},{y_hi} H{_f(x + 4)}" stroke="#000" fill="none"/>')


def _at(values: Sequence | None, i: int) -> Number:
    return values[i] if values is not None and i < len(values) else None


def _bar_values(series: Sequence[Series], stacked: bool, n: int) -> list[float]:
    values = [0.0]
    for s in series:
        values += [v for v in s.values if finite(v)]
        values += [v for v in (*(s.high or ()), *(s.low or ())) if finite(v)]
    if stacked:
        values += [sum(s.values[i] for s in series if i < len(s.values) and finite(s.values[i]))
                   for i in range(n)]
    return values


def _bar_tip(category: str, s: Series, i: int, value: Number, axes: Axes) -> str:
    if not finite(value):
        return f"{category}, {s.name}: n/a"
    tip = f"{category}, {s.name}: {_at(s.texts, i) or axes.y_format(value)}"
    low, high = _at(s.low, i), _at(s.high, i)
    if finite(low) and finite(high):
        tip += f" (95% interval {axes.y_format(low)} to {axes.y_format(high)})"
    return tip


def bars(chart_id: str, title: str, description: str, categories: Sequence[str],
         series: Sequence[Series], axes: Axes, stacked: bool = False) -> str:
    """A grouped (or stacked) bar chart: one mark per category and series.

    Args:
        chart_id: The element id (unique in the page).
        title: Shown above the chart and as its accessible name.
        description: The text alternative.
        categories: The x axis (e.g. routes).
        series: One value per category each; a missing value is drawn as "n/a".
        axes: Labels, formats and ranges (y from 0 unless fixed).
        stacked: Stack the series instead of placing them side by side.
    """
    n = len(categories)
    top = max(_bar_values(series, stacked, n))
    frame = _Frame((0.0, 1.0), _span([0.0, top * 1.1 if top > 0 else 1.0], axes.y_range))
    out = _open(chart_id, title, description) + _legend([(s.name, s.colour) for s in series])
    out += _axes(frame, axes, x_ticks=False)
    slot = (WIDTH - LEFT - RIGHT) / max(n, 1)
    width = slot * 0.8 / (1 if stacked else max(len(series), 1))
    for i, category in enumerate(categories):
        x0, base = LEFT + slot * (i + 0.1), 0.0
        out.append(f'<text x="{_f(LEFT + slot * (i + 0.5))}" y="{HEIGHT - BOTTOM + 14}" '
                   f'text-anchor="middle" font-size="11">{_t(category[:24])}</text>')
        for j, s in enumerate(series):
            value = _at(s.values, i)
            x = x0 if stacked else x0 + j * width
            tip = _bar_tip(category, s, i, value, axes)
            out.append(_bar(frame, s, i, value, (x, width, base), tip, _t(chart_id)))
            if stacked and finite(value):
                base += value
    out.append("</svg>")
    return "\n".join(out)


def _bar(frame: _Frame, s: Series, i: int, value: Number, place: tuple[float, float, float],
         tip: str, cid: str) -> str:
    x, width, base = place
    mark = [f'<g class="mark"><title>{_t(tip)}</title>']
    if not finite(value):
        mark.append(f'<text x="{_f(x + width / 2)}" y="{_f(frame.py(0) - 4)}" '
                    'text-anchor="middle" font-size="11">n/a</text></g>')
        return "".join(mark)
    y_top, y_base = frame.py(base + value), frame.py(base)
    rect = (f'x="{_f(x)}" y="{_f(y_top)}" width="{_f(width)}" '
            f'height="{_f(max(y_base - y_top, 0.0))}"')
    mark.append(f'<rect {rect} fill="{_t(s.colour)}"/>')
    if s.hatch:
        mark.append(f'<rect {rect} fill="url(#{cid}-hatch)"/>')
    mark.append(_whisker(x + width / 2, frame, _at(s.low, i), _at(s.high, i)))
    text = _at(s.texts, i)
    if text:
        mark.append(f'<text x="{_f(x + width / 2)}" y="{_f(y_top - 4)}" text-anchor="middle" '
                    f'font-size="11">{_t(text)}</text>')
    mark.append("</g>")
    return "".join(mark)


def _marker(shape: str, x: float, y: float, colour: str) -> str:
    c = _t(colour)
    if shape == "square":
        return f'<rect x="{_f(x - 4)}" y="{_f(y - 4)}" width="8" height="8" fill="{c}"/>'
    if shape == "diamond":
        return f'<path d="M{_f(x)},{_f(y - 5)} l5,5 l-5,5 l-5,-5 z" fill="{c}"/>'
    if shape == "triangle":
        return f'<path d="M{_f(x)},{_f(y - 5)} l5,9 h-10 z" fill="{c}"/>'
    return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="4" fill="{c}"/>'


def _path(frame: _Frame, points: list[tuple[float, float]], step: bool) -> str:
    d = ""
    for k, (x, y) in enumerate(points):
        px, py = _f(frame.px(x)), _f(frame.py(y))
        d += f"M{px},{py}" if k == 0 else (f" H{px} V{py}" if step else f" L{px},{py}")
    return d


def lines(chart_id: str, title: str, description: str, series: Sequence[Line], axes: Axes,
          references: Sequence[Line] = ()) -> str:
    """A line chart with a marker (one mark) per point; `references` are dotted guide lines
    (no marks). A point with a missing x or y is a mark saying "n/a" and breaks no line."""
    xs = [x for s in (*series, *references) for x, _ in s.points if finite(x)]
    ys = [y for s in (*series, *references) for _, y in s.points if finite(y)]
    ys += [v for s in series for v in (*(s.low or ()), *(s.high or ())) if finite(v)]
    frame = _Frame(_span(xs, axes.x_range), _span(ys, axes.y_range))
    out = _open(chart_id, title, description)
    out += _legend([(s.name, s.colour) for s in (*series, *references)])
    out += _axes(frame, axes)
    for ref in references:
        drawn = [(x, y) for x, y in ref.points if finite(x) and finite(y)]
        out.append(f'<path d="{_path(frame, drawn, False)}" stroke="{_t(ref.colour)}" '
                   'stroke-dasharray="3 3" fill="none"/>')
    for k, s in enumerate(series):
        drawn = [(x, y) for x, y in s.points if finite(x) and finite(y)]
        if len(drawn) > 1:
            out.append(f'<path d="{_path(frame, drawn, s.step)}" stroke="{_t(s.colour)}" '
                       'stroke-width="2" fill="none"/>')
        out += [_point(frame, s, i, x, y, axes, MARKERS[k % len(MARKERS)])
                for i, (x, y) in enumerate(s.points)]
    out.append("</svg>")
    return "\n".join(out)


def _point(frame: _Frame, s: Line, i: int, x: Number, y: Number, axes: Axes,
           shape: str) -> str:
    if not (finite(x) and finite(y)):
        # Kept as a mark with its tooltip: a point that cannot be placed is not dropped silently.
        return f'<g class="mark missing"><title>{_t(s.name)}: n/a</title></g>'
    tip = _at(s.tips, i) or f"{s.name}: {axes.x_format(x)}, {axes.y_format(y)}"
    px, py = frame.px(x), frame.py(y)
    return (f'<g class="mark"><title>{_t(tip)}</title>{_marker(shape, px, py, s.colour)}'
            f'{_whisker(px, frame, _at(s.low, i), _at(s.high, i))}</g>')


def note(chart_id: str, title: str, message: str) -> str:
    """A chart with nothing to draw: its title and why, instead of empty axes."""
    out = _open(chart_id, title, message)
    out.append(f'<text x="{WIDTH // 2}" y="{HEIGHT // 2}" text-anchor="middle" '
               f'font-size="13">{_t(message)}</text></svg>')
    return "\n".join(out)
