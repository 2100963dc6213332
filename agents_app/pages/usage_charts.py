"""The dashboard's charts as numbers: spend, tokens and requests per day per model and per
agent, error rate and latency percentiles per model, sessions per day.

Every figure is grouped in the database (one ``GROUP BY`` query per chart, over the
``log_time`` index for the date range); nothing loops over log rows in Python. Days are
calendar days in the site's time zone: a log's day is ``(created_at + offset) // DAY`` on
its integer microsecond timestamp, which PostgreSQL and SQLite both compute as integer
division. Latency percentiles use PostgreSQL's ``percentile_cont``; on other databases
(the embedded SQLite default) ``latency_percentiles_portable`` reads the one or two rows
around each percentile with ``ORDER BY … LIMIT 2 OFFSET k`` and interpolates the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

from django.db import connection
from django.db.models import (
    Aggregate,
    BigIntegerField,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents_app.base.errors import Invalid
from agents_app.models import Log, ThreadSession

DAY_US = 86_400 * 1_000_000
DEFAULT_DAYS = 14
MAX_DAYS = 366
PERCENTILES = (0.5, 0.95)
GroupBy = Literal["model", "agent"]
_GROUP_FIELD = {"model": "model", "agent": "thread__agent__name"}


@dataclass(frozen=True)
class DateRange:
    """Calendar days ``start`` to ``end``, both included."""

    start: date
    end: date

    @property
    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days + 1)]

    def bounds(self) -> tuple[datetime, datetime]:
        """The first instant of ``start`` and of the day after ``end``, in the site's zone."""
        zone = timezone.get_current_timezone()
        return (
            datetime.combine(self.start, time.min, tzinfo=zone),
            datetime.combine(self.end + timedelta(days=1), time.min, tzinfo=zone),
        )


def default_range(today: date, days: int = DEFAULT_DAYS) -> DateRange:
    return DateRange(today - timedelta(days=days - 1), today)


def _parse_day(text: str, which: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise Invalid(
            f"The {which} date “{text[:20]}” is not a date: write it as year-month-day, "
            "for example 2026-03-01."
        ) from None


def parse_range(start: str | None, end: str | None, today: date) -> DateRange:
    """The range a person asked for (``YYYY-MM-DD`` texts; either may be empty), or
    ``Invalid`` with a sentence saying what is wrong."""
    start, end = (start or "").strip(), (end or "").strip()
    if not start and not end:
        return default_range(today)
    last = _parse_day(end, "end") if end else today
    first = _parse_day(start, "start") if start else last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise Invalid("The start date is after the end date: swap them.")
    if first > today:
        raise Invalid("The start date is in the future: nothing has happened yet.")
    if (last - first).days + 1 > MAX_DAYS:
        raise Invalid(f"Choose at most {MAX_DAYS} days at a time.")
    return DateRange(first, last)


# --- per-day usage ----------------------------------------------------------------------


@dataclass(frozen=True)
class DayUsage:
    day: date
    key: str  # the model's or agent's name
    cost: Decimal
    tokens: int
    requests: int


def _requests(rng: DateRange) -> QuerySet[Log]:
    start, end = rng.bounds()
    return Log.objects.filter(
        kind=Log.Kind.LLM,
        created_at__gte=int(start.timestamp() * 1_000_000),
        created_at__lt=int(end.timestamp() * 1_000_000),
    )


def _day_number(rng: DateRange) -> ExpressionWrapper:
    # The zone's UTC offset at the range's start; a DST change inside the range moves that
    # hour's logs to the neighbouring day, which a daily chart can afford.
    start, _ = rng.bounds()
    offset = start.utcoffset() or timedelta(0)
    offset_us = int(offset.total_seconds()) * 1_000_000
    return ExpressionWrapper((F("created_at") + offset_us) / DAY_US, output_field=BigIntegerField())


def usage_by_day(rng: DateRange, by: GroupBy) -> list[DayUsage]:
    """Cost, tokens and request count of model requests per day and per ``by``."""
    field = _GROUP_FIELD[by]
    rows = (
        _requests(rng)
        .annotate(day_number=_day_number(rng))
        .values("day_number", field)
        .annotate(cost=Sum("cost_total"), tokens=Sum("total_tokens"), requests=Count("id"))
        .order_by("day_number", field)
    )
    epoch = date(1970, 1, 1)
    return [
        DayUsage(
            day=epoch + timedelta(days=int(r["day_number"])),
            key=r[field] or "(unnamed)",
            cost=r["cost"] or Decimal(0),
            tokens=int(r["tokens"] or 0),
            requests=int(r["requests"]),
        )
        for r in rows
    ]


def unknown_cost_requests(rng: DateRange) -> int:
    """Model requests in ``rng`` whose model had no known price: their cost is in no sum
    (docs/providers.md "Cost"), so the page says how many there were."""
    return _requests(rng).filter(cost_known=False).count()


# --- per-model health -------------------------------------------------------------------


class PercentileCont(Aggregate):  # type: ignore[type-arg]
    """PostgreSQL's ``percentile_cont(f) WITHIN GROUP (ORDER BY expr)``."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        super().__init__(expression, fraction=float(fraction), **extra)


@dataclass(frozen=True)
class ModelHealth:
    model: str
    requests: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


def latency_percentiles_postgres(rng: DateRange) -> dict[str, tuple[float | None, ...]]:
    rows: Any = (
        _requests(rng)
        .filter(latency_ms__isnull=False)
        .values("model")
        .annotate(**{f"p{i}": PercentileCont("latency_ms", p) for i, p in enumerate(PERCENTILES)})
        .order_by()
    )
    return {r["model"]: tuple(r[f"p{i}"] for i in range(len(PERCENTILES))) for r in rows}


def _interpolated(qs: QuerySet[Log], count: int, fraction: float) -> float:
    # percentile_cont's definition: the value at position f·(n−1) of the sorted values,
    # interpolated linearly between its two neighbours.
    position = fraction * (count - 1)
    low = math.floor(position)
    rows = qs.order_by("latency_ms").values_list("latency_ms", flat=True)[low : low + 2]
    values = [float(v or 0) for v in rows]
    if len(values) == 1 or position == low:
        return values[0]
    return values[0] + (values[1] - values[0]) * (position - low)


def latency_percentiles_portable(rng: DateRange) -> dict[str, tuple[float | None, ...]]:
    """The same figures without ``percentile_cont``: per model, a count and one two-row
    ``LIMIT/OFFSET`` read per percentile (the database sorts; Python reads ≤ 2 rows)."""
    timed = _requests(rng).filter(latency_ms__isnull=False)
    counts = timed.values("model").annotate(n=Count("id")).order_by()
    out: dict[str, tuple[float | None, ...]] = {}
    for row in counts:
        per_model = timed.filter(model=row["model"])
        out[row["model"]] = tuple(_interpolated(per_model, row["n"], p) for p in PERCENTILES)
    return out


def latency_percentiles(rng: DateRange) -> dict[str, tuple[float | None, ...]]:
    if connection.vendor == "postgresql":
        return latency_percentiles_postgres(rng)
    return latency_percentiles_portable(rng)


def model_health(rng: DateRange) -> list[ModelHealth]:
    """Requests, failed requests and p50/p95 latency (ms) per model, busiest first."""
    counts = (
        _requests(rng)
        .values("model")
        .annotate(requests=Count("id"), errors=Count("id", filter=~Q(error="")))
        .order_by("-requests", "model")
    )
    latency = latency_percentiles(rng)
    return [
        ModelHealth(
            model=r["model"] or "(unnamed)",
            requests=r["requests"],
            errors=r["errors"],
            p50_ms=latency.get(r["model"], (None, None))[0],
            p95_ms=latency.get(r["model"], (None, None))[1],
        )
        for r in counts
    ]


# --- sessions ---------------------------------------------------------------------------


def sessions_by_day(rng: DateRange) -> dict[date, int]:
    """Sessions started per day (every status: running, finished, stopped, failed)."""
    start, end = rng.bounds()
    rows = (
        ThreadSession.objects.filter(created_at__gte=start, created_at__lt=end)
        .annotate(day=TruncDate("created_at", tzinfo=timezone.get_current_timezone()))
        .values("day")
        .annotate(n=Count("id"))
        .order_by("day")
    )
    return {r["day"]: r["n"] for r in rows}


# --- for the charts ---------------------------------------------------------------------


def series(rows: Iterable[DayUsage], days: list[date], metric: str) -> dict[str, list[float]]:
    """``{key: [value per day]}`` of one metric (cost, tokens or requests), zeros filled in."""
    index = {day: i for i, day in enumerate(days)}
    out: dict[str, list[float]] = {}
    for row in rows:
        values = out.setdefault(row.key, [0.0] * len(days))
        if row.day in index:
            values[index[row.day]] += float(getattr(row, metric))
    return out
