"""Small inline SVG charts for the offline report: bars with intervals, histograms, heatmaps,
points and lines over two axes.

Every string is escaped here, so callers pass sample ids and labels as they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

WIDTH, HEIGHT = 560, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 32, 44  # margins: room for tick labels and axis titles
SERIES = ("#4c78a8", "#f58518", "#54a24b")  # one colour per series: run A, run B, ...
SCALE = ("#440154", "#21918c", "#fde725")  # viridis stops: ordered and colour-blind safe
MISSING = "#dddddd"
MAX_BINS = 30
HEAT_LEFT, CELL_HEIGHT, MAX_CELL_WIDTH, LEGEND_WIDTH = 150, 14, 48, 70


@dataclass(frozen=True)
class Bar:
    """One bar: its value and, when both are finite, an error bar from low to high."""

    value: float
    low: float = math.nan
    high: float = math.nan


@dataclass(frozen=True)
class Group:
    """Bars side by side under one label, one per series."""

    label: str
    bars: Sequence[Bar]


@dataclass(frozen=True)
class Point:
    """One point of an x-y chart, with its tooltip."""

    x: float
    y: float
    tip: str = ""


@dataclass(frozen=True)
class Series:
    """Points drawn alike: `marker` "dot", "ring" (hollow) or "" (none); `joined` draws a line
    through them in order, with `tip` as its tooltip. Named series appear in the legend."""

    name: str
    points: Sequence[Point]
    colour: str = SERIES[0]
    marker: str = "dot"
    joined: bool = False
    tip: str = ""


@dataclass(frozen=True)
class Scale:
    """Round ticks from `bottom` to `top`; called, maps a value to a y pixel of the plot area."""

    top: float
    step: float
    bottom: float = 0.0

    @classmethod
    def covering(cls, highest: float, whole: bool = False, lowest: float = 0.0) -> Scale:
        """Round ticks from `lowest` (rounded down) up to at least `highest`; whole numbers only
        when `whole`."""
        step = _nice_step(highest - lowest)
        step = max(step, 1.0) if whole else step
        bottom = step * math.floor(lowest / step)
        return cls(bottom + step * max(1, math.ceil((highest - bottom) / step)), step, bottom)

    def fraction(self, value: float) -> float:
        """Where `value` lies between bottom (0) and top (1)."""
        return (value - self.bottom) / (self.top - self.bottom)

    def __call__(self, value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - self.fraction(value))

    def ticks(self) -> list[float]:
        count = round((self.top - self.bottom) / self.step)
        return [self.bottom + self.step * i for i in range(count + 1)]


def bar_chart(
    groups: Sequence[Group], y_label: str, top: float | None = None, legend: Sequence[str] = ()
) -> str:
    """Grouped bars with error bars; the y axis runs from 0 to `top` (default: a round max)."""
    values = [v for g in groups for b in g.bars for v in (b.value, b.high) if math.isfinite(v)]
    y = Scale.covering(top if top is not None else max(values, default=1.0))
    slot = (WIDTH - LEFT - RIGHT) / max(len(groups), 1)
    parts = _y_axis(y, y_label)
    for index, group in enumerate(groups):
        parts += _group(group, LEFT + slot * index, slot, y)
    parts += _legend(legend)
    return _svg(WIDTH, HEIGHT, parts, f"bar chart: {y_label}")


def histogram(values: Sequence[float], x_label: str) -> str:
    """Counts of `values` (at least one) in equal-width bins from their min to their max."""
    low, high = min(values), max(values)
    bins = max(1, min(MAX_BINS, math.isqrt(len(values))))
    width = (high - low) / bins or 1.0  # all values equal: the first bin holds them
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    y = Scale.covering(max(counts), whole=True)
    slot = (WIDTH - LEFT - RIGHT) / bins
    parts = _y_axis(y, "attempts")
    for index, count in enumerate(counts):
        tip = f"{_num(low + width * index)} to {_num(low + width * (index + 1))}: {count}"
        parts.append(_rect(LEFT + slot * index + 1, y(count), slot - 2, y(0) - y(count), tip))
    parts += _x_ticks(low, width, bins, slot)
    parts.append(_text((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 6, x_label, "middle"))
    return _svg(WIDTH, HEIGHT, parts, f"histogram: {x_label}")


def heatmap(
    cells: Sequence[Sequence[float | None]],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    axis_titles: tuple[str, str],
    scale: tuple[float, float],
) -> str:
    """Rows x columns of cells coloured from scale[0] to scale[1]; a None cell is grey."""
    width = min(MAX_CELL_WIDTH, (WIDTH - HEAT_LEFT - LEGEND_WIDTH) / max(len(col_labels), 1))
    bottom = TOP + CELL_HEIGHT * len(row_labels)
    parts: list[str] = []
    for r, (label, row) in enumerate(zip(row_labels, cells, strict=True)):
        y = TOP + CELL_HEIGHT * r
        parts.append(_text(HEAT_LEFT - 6, y + CELL_HEIGHT - 3, _clip(label, 22), "end"))
        for c, value in enumerate(row):
            tip = f"{label}, {axis_titles[1]} {col_labels[c]}: {_num(value)}"
            parts.append(_cell(HEAT_LEFT + width * c, y, width, value, scale, tip))
    for c, label in enumerate(col_labels):
        parts.append(_text(HEAT_LEFT + width * (c + 0.5), bottom + 14, label, "middle"))
    centre = HEAT_LEFT + width * len(col_labels) / 2
    parts.append(_text(centre, bottom + 32, axis_titles[1], "middle"))
    parts.append(_text(12, TOP - 8, axis_titles[0]))
    parts += _colour_legend(HEAT_LEFT + width * len(col_labels) + 16, scale)
    height = max(bottom + BOTTOM, TOP + 120)  # the colour legend needs 100 px
    return _svg(WIDTH, height, parts, f"heatmap: {axis_titles[0]} by {axis_titles[1]}")


def xy_chart(series: Sequence[Series], axis_labels: tuple[str, str], whole_x: bool = False) -> str:
    """Points and lines over an x and a y axis, each covering its finite values in round ticks;
    x ticks are whole numbers when `whole_x` (trial numbers, counts)."""
    shown = [replace(s, points=[p for p in s.points if _finite(p.x, p.y)]) for s in series]
    points = [point for one in shown for point in one.points] or [Point(0.0, 0.0)]
    x = Scale.covering(max(p.x for p in points), whole_x, min(p.x for p in points))
    y = Scale.covering(max(p.y for p in points), lowest=min(p.y for p in points))
    parts = _y_axis(y, axis_labels[1]) + _x_axis(x, axis_labels[0])
    for one in shown:
        parts += _series(one, x, y)
    legend = dict.fromkeys((one.name, one.colour) for one in shown if one.name)
    parts += _legend([name for name, _ in legend], [fill for _, fill in legend])
    return _svg(WIDTH, HEIGHT, parts, f"chart: {axis_labels[1]} by {axis_labels[0]}")


def colour(fraction: float) -> str:
    """The scale's colour at `fraction` (clamped to 0..1), interpolated between its stops."""
    position = min(max(fraction, 0.0), 1.0) * (len(SCALE) - 1)
    index = min(int(position), len(SCALE) - 2)
    start, end = _rgb(SCALE[index]), _rgb(SCALE[index + 1])
    mixed = (round(a + (b - a) * (position - index)) for a, b in zip(start, end, strict=True))
    return "#" + "".join(f"{channel:02x}" for channel in mixed)


def _group(group: Group, x: float, slot: float, y: Scale) -> list[str]:
    width = slot * 0.7 / max(len(group.bars), 1)
    parts = [_text(x + slot / 2, HEIGHT - BOTTOM + 16, group.label, "middle")]
    for series, bar in enumerate(group.bars):
        left = x + slot * 0.15 + width * series
        parts += _bar(bar, left, width, y, f"{group.label}: ", SERIES[series % len(SERIES)])
    return parts


def _bar(bar: Bar, x: float, width: float, y: Scale, tip: str, fill: str) -> list[str]:
    centre = x + width / 2
    if not math.isfinite(bar.value):
        return [_text(centre, y(0) - 4, "n/a", "middle")]
    has_interval = math.isfinite(bar.low) and math.isfinite(bar.high)
    tip += _num(bar.value) + (f" [{_num(bar.low)}, {_num(bar.high)}]" if has_interval else "")
    parts = [_rect(x, y(bar.value), width, y(0) - y(bar.value), tip, fill)]
    if has_interval:
        top, low = y(bar.high), y(bar.low)
        path = f"M{centre - 4:.1f} {top:.1f}h8M{centre:.1f} {top:.1f}V{low:.1f}"
        parts.append(f'<path d="{path}M{centre - 4:.1f} {low:.1f}h8" stroke="#222"/>')
    label_y = y(bar.high if has_interval else bar.value) - 4
    parts.append(_text(centre, label_y, _num(bar.value), "middle"))
    return parts


def _y_axis(y: Scale, label: str) -> list[str]:
    parts = []
    for tick in y.ticks():
        parts.append(_line(LEFT, y(tick), WIDTH - RIGHT, y(tick), "#e6e6e6"))
        parts.append(_text(LEFT - 6, y(tick) + 4, _num(tick), "end"))
    parts.append(_line(LEFT, TOP, LEFT, y(y.bottom), "#333"))
    parts.append(_line(LEFT, y(y.bottom), WIDTH - RIGHT, y(y.bottom), "#333"))
    centre = (TOP + y(y.bottom)) / 2
    rotated = f'transform="rotate(-90 14 {centre:.1f})"'
    parts.append(_text(14, centre, label, "middle", rotated))
    return parts


def _x_ticks(low: float, width: float, bins: int, slot: float) -> list[str]:
    every = math.ceil(bins / 6)  # at most about seven labels, so they do not overlap
    edges = sorted({*range(0, bins + 1, every), bins})
    baseline = HEIGHT - BOTTOM
    return [
        _text(LEFT + slot * edge, baseline + 16, _num(low + width * edge), "middle")
        for edge in edges
    ]


def _x_axis(x: Scale, label: str) -> list[str]:
    """Tick labels under the plot at each of `x`'s ticks, and its title below them."""
    baseline = HEIGHT - BOTTOM
    parts = [_text(_x_pixel(x, tick), baseline + 16, _num(tick), "middle") for tick in x.ticks()]
    parts.append(_text((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 6, label, "middle"))
    return parts


def _x_pixel(x: Scale, value: float) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * x.fraction(value)


def _series(series: Series, x: Scale, y: Scale) -> list[str]:
    placed = [(_x_pixel(x, p.x), y(p.y), p.tip) for p in series.points]
    parts = []
    if series.joined and placed:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in placed)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{series.colour}" stroke-width="1.5">'
            f"<title>{escape(series.tip)}</title></polyline>"
        )
    if series.marker:
        fill = "#fff" if series.marker == "ring" else series.colour
        parts += [
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{fill}" '
            f'stroke="{series.colour}" stroke-width="1.5"><title>{escape(tip)}</title></circle>'
            for px, py, tip in placed
        ]
    return parts


def _legend(names: Sequence[str], fills: Sequence[str] = SERIES) -> list[str]:
    """Series names in a row above the plot, where no bar reaches."""
    parts = []
    for index, name in enumerate(names):
        x, fill = LEFT + 110 * index, fills[index % len(fills)]
        parts.append(f'<rect x="{x}" y="4" width="10" height="10" fill="{fill}"/>')
        parts.append(_text(x + 14, 13, _clip(name, 16)))
    return parts


def _colour_legend(x: float, scale: tuple[float, float]) -> list[str]:
    """Ten stacked swatches from high (top) to low, with the scale's ends labelled."""
    parts = []
    for step in range(10):
        fill = colour(1 - step / 9)
        parts.append(
            f'<rect x="{x:.1f}" y="{TOP + 10 * step}" width="12" height="10" fill="{fill}"/>'
        )
    parts.append(_text(x + 16, TOP + 9, _num(scale[1])))
    parts.append(_text(x + 16, TOP + 99, _num(scale[0])))
    return parts


def _cell(
    x: float, y: float, width: float, value: float | None, scale: tuple[float, float], tip: str
) -> str:
    low, high = scale
    fill = MISSING if value is None else colour((value - low) / ((high - low) or 1.0))
    return _rect(x, y, width - 1, CELL_HEIGHT - 1, tip, fill)


def _svg(width: float, height: float, parts: list[str], label: str) -> str:
    # No xmlns: inline SVG in HTML needs none, and the page then names no outside address.
    return (
        f'<svg viewBox="0 0 {width} {height:.0f}" width="{width}" role="img" '
        f'aria-label="{escape(label)}">{"".join(parts)}</svg>'
    )


def _rect(x: float, y: float, width: float, height: float, tip: str, fill: str = SERIES[0]) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 0):.1f}" height="{max(height, 0):.1f}" '
        f'fill="{fill}"><title>{escape(tip)}</title></rect>'
    )


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"/>'


def _text(x: float, y: float, content: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{escape(content)}</text>'


def _nice_step(span: float, steps: int = 4) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) covering `span` in about `steps`."""
    raw = span / steps if span > 0 else 0.25
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))


def _finite(*values: float) -> bool:
    return all(math.isfinite(value) for value in values)


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters; the middle goes, since ids differ at their ends too."""
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return text[: limit - 1 - keep] + "…" + text[-keep:]


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)
