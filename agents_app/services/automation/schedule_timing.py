"""Schedule timings as people choose them ("every weekday at 09:00") and the cron expression
or interval stored behind them (docs/studio.md, "Schedules").

A preset is turned into the same ``ScheduleSpec`` the API takes, so the runner, the
validation and the DST rules stay those of ``services.automation.schedules``; a stored spec is read
back into its preset when it is one (so editing a schedule shows the choice it was made
with), else it is "advanced" (cron or an interval as written). Descriptions of cron
expressions come from cronsim's own ``explain`` (the library that computes the times),
not from rules written here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, time
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from agents_app.base.people_format import zoned
from agents_app.services.automation.schedules import ScheduleSpec

MINUTES, HOURS, DAILY, WEEKDAYS, WEEKLY, MONTHLY, ADVANCED = (
    "minutes",
    "hours",
    "daily",
    "weekdays",
    "weekly",
    "monthly",
    "advanced",
)
REPEATS = (
    (MINUTES, "Every few minutes"),
    (HOURS, "Every few hours"),
    (DAILY, "Every day"),
    (WEEKDAYS, "Every weekday (Monday to Friday)"),
    (WEEKLY, "Every week, on the days you choose"),
    (MONTHLY, "Every month, on one day"),
    (ADVANCED, "Advanced: a cron expression or an interval in seconds"),
)
# Cron numbers its days from Sunday (0); people read weeks from Monday.
DAYS = (
    ("1", "Monday"),
    ("2", "Tuesday"),
    ("3", "Wednesday"),
    ("4", "Thursday"),
    ("5", "Friday"),
    ("6", "Saturday"),
    ("0", "Sunday"),
)
LAST_DAY = "L"
_DAY_NAMES = dict(DAYS)
_AT = re.compile(r"^(\d{1,2}) (\d{1,2}) ")


@dataclass
class Timing:
    """What the schedule form shows: a preset with its fields, or advanced cron/interval."""

    repeat: str
    every: int | None = None
    at: time | None = None
    days: list[str] = field(default_factory=list)
    day_of_month: str = ""
    cron: str = ""
    interval_seconds: int | None = None


def to_spec(timing: Timing, zone: str) -> ScheduleSpec:
    """The cron expression or interval a preset stands for (advanced: as written)."""
    at = timing.at or time(9, 0)
    clock = f"{at.minute} {at.hour}"
    if timing.repeat == MINUTES:
        return ScheduleSpec("", zone, (timing.every or 0) * 60)
    if timing.repeat == HOURS:
        return ScheduleSpec("", zone, (timing.every or 0) * 3600)
    if timing.repeat == DAILY:
        return ScheduleSpec(f"{clock} * * *", zone, None)
    if timing.repeat == WEEKDAYS:
        return ScheduleSpec(f"{clock} * * 1-5", zone, None)
    if timing.repeat == WEEKLY:
        days = sorted(timing.days, key=lambda d: (int(d) + 6) % 7)
        return ScheduleSpec(f"{clock} * * {','.join(days)}", zone, None)
    if timing.repeat == MONTHLY:
        return ScheduleSpec(f"{clock} {timing.day_of_month} * *", zone, None)
    return ScheduleSpec(timing.cron.strip(), zone, timing.interval_seconds)


def from_spec(spec: ScheduleSpec) -> Timing:
    """The preset a stored spec was made with, or ``advanced`` when it is none of them."""
    seconds = spec.interval_seconds
    if seconds is not None:
        if seconds % 3600 == 0:
            return Timing(HOURS, every=seconds // 3600)
        if seconds % 60 == 0:
            return Timing(MINUTES, every=seconds // 60)
        return Timing(ADVANCED, interval_seconds=seconds)
    parts = spec.cron.split()
    advanced = Timing(ADVANCED, cron=spec.cron)
    if len(parts) != 5 or not parts[0].isdigit() or not parts[1].isdigit():
        return advanced
    minute, hour, dom, month, dow = parts
    if int(minute) > 59 or int(hour) > 23 or month != "*":
        return advanced
    at = time(int(hour), int(minute))
    if dom == "*" and dow == "*":
        return Timing(DAILY, at=at)
    if dom == "*" and dow == "1-5":
        return Timing(WEEKDAYS, at=at)
    if dom == "*" and re.fullmatch(r"[0-6](,[0-6])*", dow):
        return Timing(WEEKLY, at=at, days=dow.split(","))
    if dow == "*" and (dom == LAST_DAY or (dom.isdigit() and 1 <= int(dom) <= 31)):
        return Timing(MONTHLY, at=at, day_of_month=dom)
    return advanced


def describe(spec: ScheduleSpec) -> str:
    """The timing in words: "Every weekday (Monday to Friday) at 09:00, Europe/Paris time"."""
    if spec.interval_seconds is not None:
        return f"{_every(spec.interval_seconds)} (counted from when it was saved)"
    timing = from_spec(spec)
    zone = f"{spec.timezone} time"
    if timing.repeat != ADVANCED and timing.at is not None:
        at = timing.at.strftime("%H:%M")
        if timing.repeat == DAILY:
            return f"Every day at {at}, {zone}"
        if timing.repeat == WEEKDAYS:
            return f"Every weekday (Monday to Friday) at {at}, {zone}"
        if timing.repeat == WEEKLY:
            names = [_DAY_NAMES[d] for d, _ in DAYS if d in timing.days]
            return f"Every {_listed(names)} at {at}, {zone}"
        if timing.repeat == MONTHLY:
            day = (
                "the last day" if timing.day_of_month == LAST_DAY else f"day {timing.day_of_month}"
            )
            return f"Every month on {day} at {at}, {zone}"
    try:
        words = CronSim(spec.cron, datetime.now(ZoneInfo("UTC"))).explain()
    except (CronSimError, ValueError, KeyError, IndexError, AttributeError):
        words = f"cron {spec.cron}"
    return f"{words} (cron {spec.cron}), {zone}"


def _every(seconds: int) -> str:
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return "Every hour" if hours == 1 else f"Every {hours:,} hours"
    if seconds % 60 == 0:
        minutes = seconds // 60
        return "Every minute" if minutes == 1 else f"Every {minutes:,} minutes"
    return f"Every {seconds:,} seconds"


def _listed(names: list[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


in_zone = zoned  # the runs' times, as the schedule pages show them
