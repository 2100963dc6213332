"""Money and times on studio pages as people read them (the dashboard's filters)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agents_app.templatetags.people_format import ago_text, usd

NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Decimal("0.1234"), "$0.12"),
        (Decimal("0.125"), "$0.13"),
        (Decimal("0"), "$0.00"),
        (None, "$0.00"),
        (Decimal("0.004"), "< $0.01"),
        (Decimal("0.005"), "$0.01"),
        (Decimal("1234.5"), "$1,234.50"),
        (0.1, "$0.10"),
    ],
)
def test_money_is_shown_to_the_cent(amount: Decimal | float | None, text: str) -> None:
    assert usd(amount) == text


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=5), "just now"),
        (timedelta(seconds=-5), "just now"),
        (timedelta(minutes=1, seconds=30), "1 minute ago"),
        (timedelta(minutes=3), "3 minutes ago"),
        (timedelta(hours=2, minutes=59), "2 hours ago"),
        (timedelta(days=1, hours=3), "1 day ago"),
        (timedelta(days=45), "1 month ago"),
        (timedelta(days=800), "2 years ago"),
        (-timedelta(minutes=5), "in 5 minutes"),
        (-timedelta(hours=1), "in 1 hour"),
    ],
)
def test_relative_times_read_right_past_and_future(delta: timedelta, text: str) -> None:
    assert ago_text(NOW - delta, NOW) == text


def test_a_missing_time_is_a_dash() -> None:
    assert ago_text(None, NOW) == "–"
