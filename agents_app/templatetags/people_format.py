"""Numbers and times as people read them on studio pages: ``$0.12``, "3 minutes ago"."""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django import template
from django.utils import timezone

register = template.Library()

CENT = Decimal("0.01")
UNITS = (
    ("year", 365 * 86400),
    ("month", 30 * 86400),
    ("day", 86400),
    ("hour", 3600),
    ("minute", 60),
)


@register.filter
def usd(value: Decimal | float | int | None) -> str:
    """Dollars to the cent; a cost under half a cent that is not zero reads "< $0.01"
    instead of a misleading "$0.00"."""
    amount = Decimal(str(value or 0))
    if 0 < amount < CENT / 2:
        return "< $0.01"
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,}"


def ago_text(when: datetime | None, now: datetime) -> str:
    """ "just now", "1 minute ago", "3 hours ago", "in 5 minutes" (a due time in the future)."""
    if when is None:
        return "–"
    seconds = int((now - when).total_seconds())
    if abs(seconds) < 60:
        return "just now"
    for unit, size in UNITS:
        count = abs(seconds) // size
        if count:
            words = f"{count} {unit}{'' if count == 1 else 's'}"
            return f"{words} ago" if seconds > 0 else f"in {words}"
    return "just now"  # unreachable: a minute or more always matches "minute"


@register.filter
def ago(when: datetime | None) -> str:
    return ago_text(when, timezone.now())


@register.filter
def whole(value: float | int | Decimal | None) -> str:
    """A count with thousands separators: 12,345."""
    return f"{round(value or 0):,}"
