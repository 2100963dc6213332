"""The dashboard's charts: figures from ``pages.usage_charts``, drawn by ``admin.charts``.

The date range comes from the page's GET parameters ``from`` and ``to`` (``YYYY-MM-DD``);
a range that makes no sense is explained in words and the default (the last 14 days) is
drawn instead.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from agents_app.admin.charts import (
    MAX_SERIES,
    OTHER_COLOUR,
    PALETTE,
    Bar,
    colours,
    horizontal_bars,
    stacked_bars,
)
from agents_app.base.errors import Invalid
from agents_app.base.people_format import plural, usd, whole
from agents_app.pages.usage_charts import (
    DEFAULT_DAYS,
    DateRange,
    DayUsage,
    default_range,
    model_health,
    parse_range,
    series,
    sessions_by_day,
    unknown_cost_requests,
    usage_by_day,
)

OTHER = "other"
QUICK_RANGES = (7, 14, 30, 90)


def compact(value: float) -> str:
    """An axis label: 950, 12k, 1.5M."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + suffix
    return whole(value)


def duration(ms: float | None) -> str:
    if ms is None:
        return "–"
    return f"{round(ms):,} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _top(values: dict[str, list[float]]) -> dict[str, list[float]]:
    """At most ``MAX_SERIES`` series: the largest ones, the rest summed as "other"."""
    ranked = sorted(values, key=lambda k: -sum(values[k]))
    if len(ranked) <= MAX_SERIES:
        return values
    kept = {k: values[k] for k in ranked[: MAX_SERIES - 1]}
    rest = ranked[MAX_SERIES - 1 :]
    kept[OTHER] = [sum(values[k][i] for k in rest) for i in range(len(values[rest[0]]))]
    return kept


METRICS: tuple[tuple[str, str, Callable[[float], str], Callable[[float], str], float], ...] = (
    ("cost", "Spend", lambda v: usd(Decimal(str(v))), lambda v: usd(Decimal(str(v))), 0.01),
    ("tokens", "Tokens", lambda v: f"{whole(v)} tokens", compact, 1.0),
    ("requests", "Requests", lambda v: plural(round(v or 0), "request"), compact, 1.0),
)


def _usage_charts(rng: DateRange, rows: list[DayUsage], by: str) -> list[dict[str, Any]]:
    days = rng.days
    charts = []
    by_metric = {metric: _top(series(rows, days, metric)) for metric, *_ in METRICS}
    order = sorted(by_metric["requests"], key=lambda k: -sum(by_metric["requests"][k]))
    palette = colours([k for k in order if k != OTHER])
    palette[OTHER] = OTHER_COLOUR
    for metric, title, fmt, axis_fmt, min_step in METRICS:
        svg, legend = stacked_bars(
            days,
            by_metric[metric],
            palette,
            fmt,
            axis_fmt,
            f"{title} per day by {by}",
            min_step,
        )
        charts.append(
            {
                "id": f"{metric}-by-{by}",
                "title": f"{title} per day, by {by}",
                "svg": svg,
                "legend": legend,
            }
        )
    return charts


def _health_charts(rng: DateRange) -> list[dict[str, Any]]:
    health = model_health(rng)
    if not health:
        return []
    rates = horizontal_bars(
        [
            (
                h.model,
                [
                    Bar(
                        h.error_rate * 100,
                        "#d55e00",
                        f"{h.error_rate:.1%} ({whole(h.errors)} of {whole(h.requests)})",
                    )
                ],
            )
            for h in health
        ],
        100.0,
        "Failed requests per model, in percent",
    )
    slowest = max((h.p95_ms or 0 for h in health), default=0)
    latency = horizontal_bars(
        [
            (
                h.model,
                [
                    Bar(h.p50_ms or 0, PALETTE[4], f"p50 {duration(h.p50_ms)}"),
                    Bar(h.p95_ms or 0, PALETTE[0], f"p95 {duration(h.p95_ms)}"),
                ],
            )
            for h in health
        ],
        slowest,
        "Latency per model: median (p50) and 95th percentile (p95)",
    )
    return [
        {"id": "error-rate", "title": "Failed requests per model", "svg": rates, "legend": []},
        {"id": "latency", "title": "Latency per model (p50 and p95)", "svg": latency, "legend": []},
    ]


def _sessions_chart(rng: DateRange) -> dict[str, Any]:
    counts = sessions_by_day(rng)
    values = {"all agents": [float(counts.get(day, 0)) for day in rng.days]}
    svg, legend = stacked_bars(
        rng.days,
        values,
        {"all agents": PALETTE[2]},
        lambda v: f"{whole(v)} sessions",
        compact,
        "Sessions started per day",
    )
    return {"id": "sessions", "title": "Sessions started per day", "svg": svg, "legend": legend}


def charts_context(request: HttpRequest) -> dict[str, Any]:
    today = timezone.localdate()
    error = ""
    try:
        rng = parse_range(request.GET.get("from"), request.GET.get("to"), today)
    except Invalid as exc:
        error = exc.message
        rng = default_range(today)
    by_model = usage_by_day(rng, "model")
    by_agent = usage_by_day(rng, "agent")
    requests = sum(r.requests for r in by_model)
    return {
        "range": rng,
        "range_error": error,
        "range_days": len(rng.days),
        "quick_ranges": [
            {
                "days": n,
                "from": (today - timedelta(days=n - 1)).isoformat(),
                "to": today.isoformat(),
                "current": not error and rng == default_range(today, n),
            }
            for n in QUICK_RANGES
        ],
        "default_days": DEFAULT_DAYS,
        "totals": {
            "spend": sum((r.cost for r in by_model), Decimal(0)),
            "tokens": sum(r.tokens for r in by_model),
            "requests": requests,
            "unknown_cost_requests": unknown_cost_requests(rng),
        },
        "empty": requests == 0,
        # Side by side per metric: spend by model | by agent, then tokens, then requests.
        "usage": [
            chart
            for pair in zip(
                _usage_charts(rng, by_model, "model"),
                _usage_charts(rng, by_agent, "agent"),
                strict=True,
            )
            for chart in pair
        ],
        "health": _health_charts(rng),
        "sessions": _sessions_chart(rng),
    }
