"""Numbers, times and reasons as people read them: ``$0.12``, "3 minutes ago", "stopped by you".

One formatting layer for every page, export and message (issue #55); the templates use the
same functions as filters (``{% load people_format %}``, ``agents_app.templatetags``)."""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from zoneinfo import ZoneInfo

from django.utils import timezone
from django.utils.html import format_html

CENT = Decimal("0.01")
UNITS = (
    ("year", 365 * 86400),
    ("month", 30 * 86400),
    ("day", 86400),
    ("hour", 3600),
    ("minute", 60),
)


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


def ago(when: datetime | None) -> str:
    return ago_text(when, timezone.now())


def whole(value: float | int | Decimal | None) -> str:
    """A count with thousands separators: 12,345."""
    return f"{round(value or 0):,}"


# --- the studio's one place for human formats (issue #40 item 9) ------------------------------

# Reasons a request or session ended, as the code stores them, in words (the code stays in a
# tooltip for whoever searches logs or the docs for it).
REASONS = {
    "stop": "Answered",
    "tool_calls": "Called tools",
    "length": "Cut off at the length limit",
    "content_filter": "Blocked by the content filter",
    "step_error": "A step failed",
    "stopped": "Stopped",
    "interrupted": "Interrupted",
    "timeout": "Timed out",
    "rate_limit": "Refused: too many requests",
    "auth": "Refused: the key was not accepted",
    "network": "Could not reach the provider",
    "budget": "The spend budget is used up",
    # A failed request's type (runtime.providers.base.ERROR_CODES and the engine's own).
    "authentication": "Refused: the API key was missing or not accepted",
    "overloaded": "The provider was overloaded",
    "context_too_long": "The conversation was too long for the model",
    "invalid_request": "The provider refused the request",
    "unknown": "The provider answered with an error",
    "hook_error": "A hook failed",
    "tool_execution_error": "The tool failed",
    "tool_error": "The tool failed",
    # Why a session ended (runtime.core.progress.StopReason).
    "stop_on_response": "Answered",
    "stop_tool": "Called its stop tool",
    "max_side_steps": "Reached its step limit for a turn",
    "max_side_turns": "Reached its turn limit",
    "max_total_steps": "Reached the session's step limit",
    "max_session_turns": "Reached the session's turn limit",
    "session_stop": "Ended the conversation (its end tool)",
    "session_fail": "Ended the conversation as failed",
    "repeated_tool_error": "Stopped after repeated tool errors",
    "aborted_by_user": "Stopped by a person",
    "hook_blocked": "Blocked by a hook",
    "state_stop_session": "Ended by the agent's code",
    "awaiting_human": "Waiting for the person's reply",
    "both_sides_stopped": "Both sides stopped",
    "awaiting_tool": "Waiting for a decision on a tool call",
    "handler_idle": "Both handler sides had nothing to answer",
    "every_step": "One step per turn",
    "handler_turn": "Its handler answered",
}
# Below a millionth of a dollar, digits say nothing a person can use.
MICRO = Decimal("0.000001")


def money(value: Decimal | float | int | None) -> str:
    """Dollars to the cent; a cost under half a cent that is not zero reads "< $0.01" (never
    ``0.000061500000`` or ``$0.000000``)."""
    return usd(value)


def money_fine(value: Decimal | float | int | None) -> str:
    """Dollars to the cent from a cent up; below a cent, two significant digits ("$0.0018",
    "$0.00089"), so small costs stay comparable (an eval run's cases, a short thread)."""
    amount = Decimal(str(value or 0))
    if amount == 0 or abs(amount) >= CENT:
        return usd(amount)
    if abs(amount) < MICRO:
        return "< $0.000001"
    step = Decimal(10) ** (amount.adjusted() - 1)
    return f"${amount.quantize(step, rounding=ROUND_HALF_UP).normalize():f}"


def per_million(value: Decimal | float | int | None) -> str:
    """A model's price: "$1.50 per million tokens", "$0.075 per million tokens"."""
    if value is None:
        return "–"
    amount = Decimal(str(value)).normalize()
    cents = int(amount.as_tuple().exponent) >= -2
    shown = f"${amount.quantize(CENT):,}" if cents else f"${amount:f}"
    return f"{shown} per million tokens"


def worker(claim: str | None) -> str:
    """A session's worker claim ("vm:11514:8a615d") as "process 11514 on vm", the claim in a
    tooltip."""
    parts = (claim or "").split(":")
    if len(parts) < 2:
        return claim or "–"
    return format_html('<span title="{}">process {} on {}</span>', claim, parts[1], parts[0])


def duration(ms: int | float | None) -> str:
    """A duration in milliseconds as people say it: "850 ms", "1.2 s", "2 min 5 s"."""
    if ms is None:
        return "–"
    if ms < 1000:
        return f"{round(ms)} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def local_time(when: datetime | None) -> str:
    """A ``<time>`` to the minute in the instance's zone; ``studio/local_times.js`` rewrites it
    in the reader's own zone and language. The exact instant is in the tooltip."""
    if when is None:
        return "–"
    shown = timezone.localtime(when)
    return format_html(
        '<time datetime="{}" title="{}" data-local>{}</time>',
        when.isoformat(),
        shown.strftime("%Y-%m-%d %H:%M:%S %Z"),
        shown.strftime("%-d %b %Y, %H:%M"),
    )


def zoned(when: datetime, zone: str) -> str:
    """A time as people read it in a given zone (a schedule's own): "Tue 3 Dec 09:00", with
    the year when it is not this year's. An unknown zone shows the time as it is."""
    try:
        local = when.astimezone(ZoneInfo(zone))
    except (ValueError, KeyError):
        local = when
    shown = local.strftime("%a %-d %b %H:%M")
    if local.year == datetime.now(local.tzinfo).year:
        return shown
    return local.strftime("%a %-d %b %Y %H:%M")


def reason_words(code: str) -> str:
    """A stored reason code in words, as plain text (a sentence's part, a tooltip)."""
    return REASONS.get(code, code.replace("_", " ").capitalize())


def reason(code: str | None) -> str:
    """A stored reason code in words, the code itself in a tooltip."""
    if not code:
        return "–"
    return format_html('<span title="{}">{}</span>', code, reason_words(code))


def failed_words(error: str | None, size: int = 60) -> str:
    """A failure with no known type, in a few words: the start of its error's first line
    ("Failed: could not reach the provider"), never a bare "Failed"."""
    first = (error or "").strip().splitlines()[0] if (error or "").strip() else ""
    if not first:
        return "Failed, with no error recorded"
    cut = first if len(first) <= size else first[: size - 1].rstrip() + "…"
    return f"Failed: {cut}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 request", "2 requests", "1,234 requests"."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"
