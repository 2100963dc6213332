"""Money and times on studio pages as people read them (the dashboard's filters)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agents_app.base.people_format import ago_text, usd

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


def test_a_failure_says_what_failed_in_a_few_words() -> None:
    """Issue #55 item 8: the Logs list never says a bare "Failed"."""
    from agents_app.base.people_format import REASONS, failed_words, reason_words

    assert failed_words("could not reach the provider\ntraceback…") == (
        "Failed: could not reach the provider"
    )
    assert failed_words("x" * 100).endswith("…") and len(failed_words("x" * 100)) == 68
    assert failed_words("") == "Failed, with no error recorded"
    for code in ("authentication", "overloaded", "context_too_long", "invalid_request"):
        assert code in REASONS  # every provider error code has its words
    assert reason_words("hook_error") == "A hook failed"
    assert reason_words("brand_new_code") == "Brand new code"
