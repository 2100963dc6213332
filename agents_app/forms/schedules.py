"""The schedule form: the timing chosen from presets ("every weekday at 09:00") with cron and
an interval kept for "Advanced" (``services.automation.schedule_timing``), every mistake reported at
once on its own field in words, and the next five runs shown for confirmation before the
first save of a new or changed timing (``preview``: the admin draws it as a neutral box,
not as an error)."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django import forms
from django.conf import settings
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agents_app.base.errors import DomainError
from agents_app.base.people_format import duration
from agents_app.forms.fields import KeyValueLinesField
from agents_app.models import Schedule
from agents_app.services.automation import schedule_timing as timing
from agents_app.services.automation import schedules

CONFIRM = "confirm"
# cronsim's refusals, saying which field and what it takes.
CRON_WORDS = {
    "Bad second": "the seconds (the first of six fields) must be 0 to 59",
    "Bad minute": "the minute (1st field) must be 0 to 59",
    "Bad hour": "the hour (2nd field) must be 0 to 23",
    "Bad day-of-month": "the day of the month (3rd field) must be 1 to 31",
    "Bad month": "the month (4th field) must be 1 to 12",
    "Bad day-of-week": "the weekday (5th field) must be 0 to 7 (0 and 7 are Sunday)",
    "Wrong number of fields": "it needs five fields: minute, hour, day of the month, month "
    "and weekday",
}
# Form fields that make up the timing (the preset's and the advanced ones).
PRESET_FIELDS = ("repeat", "every", "at", "days", "day_of_month")
ADVANCED_FIELDS = ("cron", "interval_seconds")


def _fingerprint(spec: schedules.ScheduleSpec) -> str:
    text = f"{spec.cron}|{spec.timezone}|{spec.interval_seconds}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"the {n}{suffix}"


@dataclass(frozen=True)
class Preview:
    """What the confirmation box shows: the timing in words and the next runs in its zone."""

    description: str
    zone: str
    runs: list[str]


class ZoneInput(forms.TextInput):
    """A text box that suggests the IANA zone names as one types (a ``<datalist>``)."""

    def __init__(self) -> None:
        super().__init__(attrs={"list": "studio-time-zones", "autocomplete": "off", "size": 30})

    def render(self, name: str, value: Any, attrs: Any = None, renderer: Any = None) -> SafeString:
        box = super().render(name, value, attrs, renderer)
        options = format_html_join("", '<option value="{}">', ((z,) for z in _zones()))
        return format_html('{}<datalist id="studio-time-zones">{}</datalist>', box, options)


def _zones() -> list[str]:
    return sorted(z for z in available_timezones() if "/" in z or z == "UTC")


class MultipleFiles(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented pattern: each file cleaned alone)."""

    def clean(self, data: Any, initial: Any = None) -> Any:
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(d, initial) for d in data]
        return super().clean(data, initial)


class ScheduleForm(forms.ModelForm):
    repeat = forms.ChoiceField(
        label="Repeat",
        choices=timing.REPEATS,
        required=False,
        initial=timing.DAILY,
        help_text="How often the message is sent. Advanced takes a cron expression (for "
        "developers) or a number of seconds.",
    )
    every = forms.IntegerField(
        label="Every",
        required=False,
        min_value=1,
        widget=forms.NumberInput(attrs={"size": 5}),
        help_text="How many minutes (or hours) between two runs, counted from when you save.",
        error_messages={"invalid": "Write a whole number, like 15.", "min_value": "At least 1."},
    )
    at = forms.TimeField(
        label="At",
        required=False,
        input_formats=["%H:%M", "%H:%M:%S"],
        widget=forms.TimeInput(format="%H:%M", attrs={"type": "time"}),
        help_text="The time of day, in the schedule's time zone below.",
        error_messages={"invalid": "Write the time as hours and minutes, like 09:30."},
    )
    days = forms.MultipleChoiceField(
        label="On",
        choices=timing.DAYS,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The days of the week it runs on.",
    )
    day_of_month = forms.ChoiceField(
        label="Day of the month",
        required=False,
        choices=[("", "—")]
        + [(str(n), _ordinal(n)) for n in range(1, 32)]
        + [(timing.LAST_DAY, "the last day of the month")],
        help_text="A month without that day (the 31st in April) is skipped; choose the last "
        "day of the month to run in every month.",
    )
    timezone = forms.CharField(
        label="Time zone",
        max_length=64,
        widget=ZoneInput(),
        error_messages={"required": "Choose the time zone the times are in, like Europe/Paris."},
        help_text="The zone the times are in: a region and a city, like Europe/Paris (type "
        "to search). On the day the clocks change, a time that does not exist runs at the "
        "first moment after it, and a time that happens twice runs once.",
    )
    previewed = forms.CharField(required=False, widget=forms.HiddenInput)
    upload = MultipleFileField(
        label="Attachments",
        required=False,
        widget=MultipleFiles(),
        help_text="Files each run's message carries (at most 10, 5 MiB in all). Choosing files "
        "replaces the ones kept; leave it empty to keep them.",
    )
    drop_files = forms.BooleanField(label="Remove the attachments", required=False)
    env_lines = KeyValueLinesField(
        label="Thread env",
        help_text="Env values each run's thread gets, one NAME=value per line. The values are "
        "never shown again: typing lines replaces them all; leave it empty to keep them.",
    )

    class Meta:
        model = Schedule
        fields = [
            "name",
            "agent",
            "message",
            "cron",
            "timezone",
            "interval_seconds",
            "target",
            "catch_up",
            "paused",
        ]
        labels = {"cron": "Cron expression", "interval_seconds": "Or every N seconds"}
        help_texts = {
            "cron": "Five fields (minute hour day month weekday), or six with seconds first, "
            "as cronsim reads them: 0 9 * * 1-5 is 09:00 from Monday to Friday.",
            "interval_seconds": "Instead of cron: every N seconds from the save (at least 60).",
            "catch_up": "After an outage, how many missed runs to make up besides the latest.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.preview: Preview | None = None
        self.timing_changed = False
        row = self.instance
        if not row._state.adding:
            chosen = timing.from_spec(schedules.spec_of(row))
            self.initial.update(
                repeat=chosen.repeat,
                every=chosen.every,
                at=chosen.at,
                days=chosen.days,
                day_of_month=chosen.day_of_month,
            )
        else:
            self.initial.setdefault("timezone", settings.TIME_ZONE)
        if not row._state.adding and row.attachments:
            names = ", ".join(a["name"] for a in row.attachments)
            self.fields["upload"].help_text += f" Kept now: {names}."
        if not row._state.adding and row.env_names:
            self.fields["env_lines"].help_text += f" Set now: {', '.join(row.env_names)}."

    def clean_upload(self) -> list[dict[str, Any]] | None:
        uploads = self.files.getlist("upload") if hasattr(self.files, "getlist") else []
        if not uploads:
            return None
        items = [
            {
                "name": f.name,
                "mimeType": f.content_type or "application/octet-stream",
                "data": base64.b64encode(f.read()).decode(),
            }
            for f in uploads
        ]
        try:
            return schedules.attachments_checked(items)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    def save(self, commit: bool = True) -> Any:
        row = self.instance
        if self.cleaned_data.get("drop_files"):
            row.attachments = []
        elif self.cleaned_data.get("upload") is not None:
            row.attachments = self.cleaned_data["upload"]
        if self.cleaned_data.get("env_lines"):
            row.env = self.cleaned_data["env_lines"]
        return super().save(commit)

    # --- the timing ----------------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        repeat = data.get("repeat") or timing.ADVANCED
        if repeat != timing.ADVANCED:
            # The advanced boxes are hidden for a preset: what they hold is not used.
            for name in ADVANCED_FIELDS:
                self.errors.pop(name, None)
        zone = self._zone(data)
        chosen = self._timing(repeat, data)
        if chosen is None:
            return data
        spec = timing.to_spec(chosen, zone or "UTC")
        try:
            upcoming = schedules.next_times(spec, 5)
        except DomainError as exc:
            self.add_error(_field_of(repeat, spec), _in_words(exc.message, repeat))
            return data
        if zone is None:
            return data  # the zone's own error is on its field; the timing itself is sound
        data.update(cron=spec.cron, interval_seconds=spec.interval_seconds, timezone=zone)
        row = self.instance
        self.timing_changed = row._state.adding or spec != schedules.spec_of(row)
        if self.timing_changed and data.get("previewed") != _fingerprint(spec):
            posted = self.data.copy()  # type: ignore[attr-defined]
            # Saving again confirms these times; the advanced boxes show the cron behind them.
            posted["previewed"] = _fingerprint(spec)
            posted["cron"] = spec.cron
            posted["interval_seconds"] = spec.interval_seconds or ""
            self.data = posted
            self.preview = Preview(
                timing.describe(spec), zone, [timing.in_zone(t, zone) for t in upcoming]
            )
            raise forms.ValidationError(
                "Check the next runs above, then save again to confirm.", code=CONFIRM
            )
        return data

    def only_waits_for_confirmation(self) -> bool:
        """Whether the form's one "error" is the confirmation of a new timing."""
        if self.preview is None or list(self.errors) != ["__all__"]:
            return False
        return all(e.code == CONFIRM for e in self.errors.as_data()["__all__"])

    def _zone(self, data: dict[str, Any]) -> str | None:
        name = (data.get("timezone") or "").strip()
        if "timezone" in self.errors:
            return None
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            self.add_error(
                "timezone",
                f"There is no time zone called “{name}”. Choose one from the list as you "
                "type: a region and a city, like Europe/Paris or America/New_York.",
            )
            return None
        return name

    def _timing(self, repeat: str, data: dict[str, Any]) -> timing.Timing | None:
        """The chosen timing, or None after adding its mistakes to their fields."""
        if any(name in self.errors for name in (*PRESET_FIELDS, *ADVANCED_FIELDS)):
            return None
        every, at = data.get("every"), data.get("at")
        if repeat in (timing.MINUTES, timing.HOURS):
            if every is None:
                unit = "minutes" if repeat == timing.MINUTES else "hours"
                self.add_error("every", f"How many {unit} between two runs? Write a number.")
                return None
            return timing.Timing(repeat, every=every)
        if repeat == timing.ADVANCED:
            cron, seconds = (data.get("cron") or "").strip(), data.get("interval_seconds")
            if bool(cron) == (seconds is not None):
                self.add_error(
                    "cron",
                    "Write a cron expression, or leave it empty and give a number of seconds "
                    "below (one of the two).",
                )
                return None
            return timing.Timing(repeat, cron=cron, interval_seconds=seconds)
        missing = False
        if at is None:
            self.add_error("at", "Choose the time of day it runs, like 09:30.")
            missing = True
        if repeat == timing.WEEKLY and not data.get("days"):
            self.add_error("days", "Tick at least one day of the week.")
            missing = True
        if repeat == timing.MONTHLY and not data.get("day_of_month"):
            self.add_error("day_of_month", "Choose the day of the month it runs on.")
            missing = True
        if missing:
            return None
        return timing.Timing(
            repeat,
            at=at,
            days=list(data.get("days") or []),
            day_of_month=data.get("day_of_month") or "",
        )


def _field_of(repeat: str, spec: schedules.ScheduleSpec) -> str:
    if repeat in (timing.MINUTES, timing.HOURS):
        return "every"
    if repeat == timing.ADVANCED:
        return "cron" if spec.cron else "interval_seconds"
    return "at"


def _in_words(message: str, repeat: str) -> str:
    """The service's sentence without its API field name ("cron: …", "intervalSeconds …")."""
    if repeat in (timing.MINUTES, timing.HOURS):
        shortest = settings.STUDIO_SCHEDULE_MIN_INTERVAL_SECONDS
        return (
            f"A schedule runs at most once every {duration(shortest * 1000)} and at least "
            "once a year: choose a number in between."
        )
    for prefix in ("cron: ", "timezone: "):
        if message.startswith(prefix):
            message = message.removeprefix(prefix)
            if prefix == "cron: " and "apart" not in message:
                why = CRON_WORDS.get(message, message)
                return f"This cron expression cannot be read: {why}."
    message = message.replace("intervalSeconds must be", "The time between two runs must be")
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")
