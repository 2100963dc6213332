"""Server-side SVG charts for studio pages: stacked bars per day and horizontal bars.

Drawn here rather than with a JavaScript chart library: the pages' Content-Security-Policy
refuses inline scripts and styles, an SVG needs neither (colours are presentation
attributes), it works with scripts off and prints, and there is no vendored file to keep
up to date. Each bar carries a ``<title>`` (the browser shows it on hover or long-press),
and the legend under a chart repeats every series' total in words.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Distinguishable colours (Okabe–Ito based, readable for colour-blind people) then greys.
PALETTE = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#cc79a7",
    "#56b4e9",
    "#d55e00",
    "#7a6f00",
    "#3b3f8f",
)
OTHER_COLOUR = "#9e9e9e"
MAX_SERIES = len(PALETTE)

# Small enough that the text stays legible on a phone (drawn at ~0.9×) and on a desktop half-column (~1.2×).
WIDTH, HEIGHT = 360, 200
LEFT, RIGHT, TOP, BOTTOM = 50, 6, 10, 24
FONT = 12


def colours(keys: Sequence[str]) -> dict[str, str]:
    """One colour per key, stable across charts of the same page (keys in a fixed order)."""
    return {key: PALETTE[i % len(PALETTE)] for i, key in enumerate(keys)}


def axis_top(value: float, min_step: float) -> float:
    """Four gridline steps of 1, 2 or 5 times a power of ten (never below ``min_step``, so a
    money axis steps in whole cents and a count axis in whole numbers) covering ``value``."""
    wanted = max(value / 4, min_step)
    power = 10 ** math.floor(math.log10(wanted))
    step = next(s * power for s in (1, 2, 5, 10) if wanted <= s * power * (1 + 1e-9))
    return 4 * max(step, min_step)


def _attr(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, anchor: str = "end", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return (
        f'<text x="{_attr(x)}" y="{_attr(y)}" text-anchor="{anchor}" font-size="{FONT}"'
        f' fill="currentColor"{klass}>{escape(text)}</text>'
    )


def _day_label(day: date) -> str:
    return f"{day.strftime('%b')} {day.day}"


@dataclass(frozen=True)
class LegendItem:
    key: str
    colour: str
    total: str


def stacked_bars(
    days: list[date],
    series: dict[str, list[float]],
    palette: dict[str, str],
    fmt: Callable[[float], str],
    axis_fmt: Callable[[float], str],
    label: str,
    min_step: float = 1.0,
) -> tuple[SafeString, list[LegendItem]]:
    """One bar per day, one segment per series; the legend lists each series' total."""
    keys = [k for k in palette if k in series] + [k for k in series if k not in palette]
    totals = [sum(series[k][i] for k in keys) for i in range(len(days))]
    top = axis_top(max(totals, default=0), min_step)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(days), 1)
    bar = max(slot * 0.72, 1.0)
    parts = [
        f'<svg class="studio-chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
        f' aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for step in range(5):
        value = top * step / 4
        y = TOP + plot_h - plot_h * step / 4
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_attr(y)}" y2="{_attr(y)}"'
            f' stroke="currentColor" stroke-opacity="{0.35 if step == 0 else 0.12}"/>'
        )
        parts.append(_text(LEFT - 6, y + FONT / 3, axis_fmt(value)))
    every = max(1, math.ceil(len(days) / 5))
    for i, day in enumerate(days):
        x = LEFT + slot * i + (slot - bar) / 2
        y = TOP + plot_h
        for key in keys:
            value = series[key][i]
            if value <= 0:
                continue
            h = plot_h * value / top
            y -= h
            tip = f"{_day_label(day)} · {key}: {fmt(value)}"
            parts.append(
                f'<rect x="{_attr(x)}" y="{_attr(y)}" width="{_attr(bar)}"'
                f' height="{_attr(max(h, 0.5))}" fill="{palette.get(key, OTHER_COLOUR)}">'
                f"<title>{escape(tip)}</title></rect>"
            )
        if i % every == 0:
            parts.append(_text(x + bar / 2, HEIGHT - 8, _day_label(day), anchor="middle"))
    parts.append("</svg>")
    legend = [
        LegendItem(key, palette.get(key, OTHER_COLOUR), fmt(sum(series[key])))
        for key in sorted(keys, key=lambda k: -sum(series[k]))
    ]
    return mark_safe("".join(parts)), legend


@dataclass(frozen=True)
class Bar:
    value: float
    colour: str
    text: str  # what the bar means, in words (its title and the label after it)


ROW_H, LABEL_W, TEXT_W = 34, 100, 110


def horizontal_bars(rows: list[tuple[str, list[Bar]]], top: float, label: str) -> SafeString:
    """One row per label with its bars side by side in height; ``top`` is the full width."""
    top = top or 1.0
    height = TOP + ROW_H * len(rows) + 4
    plot_w = WIDTH - LABEL_W - TEXT_W
    parts = [
        f'<svg class="studio-chart-svg" viewBox="0 0 {WIDTH} {height}" role="img"'
        f' aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for r, (name, bars) in enumerate(rows):
        y0 = TOP + ROW_H * r
        shown = name if len(name) <= 13 else name[:12] + "…"
        parts.append(_text(LABEL_W - 6, y0 + ROW_H / 2 + FONT / 3, shown))
        thickness = (ROW_H - 8) / max(len(bars), 1)
        for b, item in enumerate(bars):
            y = y0 + 4 + thickness * b
            w = max(plot_w * min(item.value / top, 1.0), 1.0 if item.value > 0 else 0.0)
            parts.append(
                f'<rect x="{LABEL_W}" y="{_attr(y)}" width="{_attr(w)}"'
                f' height="{_attr(thickness - 2)}" fill="{item.colour}">'
                f"<title>{escape(name)}: {escape(item.text)}</title></rect>"
            )
            parts.append(
                f'<text x="{_attr(LABEL_W + w + 4)}" y="{_attr(y + thickness / 2 + 3)}"'
                f' font-size="{FONT - 1}" fill="currentColor">{escape(item.text)}</text>'
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))
