"""Issue #55 item 3: a schedule is made without cron. The form's presets build the cron or
interval behind the scenes, the next five runs are a confirmation (not an error), every
mistake is reported at once in words on its field, and saved schedules read in their own
zone (run rows titled in words)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from django.test import Client

from agents_app.models import Agent, Schedule, ScheduleRun
from agents_app.services.automation import schedule_timing as timing
from agents_app.services.automation.schedules import ScheduleSpec
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db

ADD = "/admin/agents_app/schedule/add/"


@pytest.fixture
def form(admin_client: Client) -> dict[str, Any]:
    define_agent("helper")
    return fill(
        read_form(admin_client, ADD),
        name="digest",
        agent=Agent.objects.get(name="helper").pk,
        message="Digest please",
        timezone="Europe/Paris",
    )


def _confirm(client: Client, data: dict[str, Any]) -> Any:
    """Post, expect the confirmation, post again as the box's Save does."""
    first = post(client, ADD, data)
    assert first.status_code == 200 and not Schedule.objects.exists(), errors_of(first)
    assert first.context["schedule_preview"] is not None, errors_of(first)
    previewed = first.context["adminform"].form.data["previewed"]
    saved = post(client, ADD, {**data, "previewed": previewed})
    assert saved.status_code == 302, errors_of(saved)
    return first


@pytest.mark.parametrize(
    ("fields", "cron", "interval"),
    [
        ({"repeat": "minutes", "every": "15"}, "", 900),
        ({"repeat": "hours", "every": "2"}, "", 7200),
        ({"repeat": "daily", "at": "08:30"}, "30 8 * * *", None),
        ({"repeat": "weekdays", "at": "09:00"}, "0 9 * * 1-5", None),
        ({"repeat": "weekly", "at": "17:45", "days": ["0", "1", "5"]}, "45 17 * * 1,5,0", None),
        ({"repeat": "monthly", "at": "06:00", "day_of_month": "15"}, "0 6 15 * *", None),
        ({"repeat": "monthly", "at": "06:00", "day_of_month": "L"}, "0 6 L * *", None),
        ({"repeat": "advanced", "cron": "*/5 * * * *"}, "*/5 * * * *", None),
    ],
)
def test_each_preset_saves_the_cron_or_interval_behind_it(
    admin_client: Client, form: dict[str, Any], fields: dict[str, Any], cron: str, interval: Any
) -> None:
    _confirm(admin_client, fill(form, **fields))
    row = Schedule.objects.get()
    assert (row.cron, row.interval_seconds, row.timezone) == (cron, interval, "Europe/Paris")
    # Opened again, the form shows the preset it was made with.
    again = read_form(admin_client, f"/admin/agents_app/schedule/{row.pk}/change/")
    assert again["repeat"] == fields["repeat"]


def test_the_next_runs_are_a_confirmation_in_the_schedules_zone_not_an_error(
    admin_client: Client, form: dict[str, Any]
) -> None:
    first = _confirm(admin_client, fill(form, repeat="weekdays", at="09:00"))
    page = first.content.decode()
    assert "Please correct" not in page and "errornote" not in page
    assert 'id="schedule-confirm"' in page
    assert "Every weekday (Monday to Friday) at 09:00, Europe/Paris time" in page
    box = page[page.index('id="schedule-confirm"') : page.index("</section>")]
    assert box.count("09:00</li>") == 5 and "T0" not in box  # no ISO times
    row = Schedule.objects.get()
    change = admin_client.get(f"/admin/agents_app/schedule/{row.pk}/change/").content.decode()
    assert change.count("09:00</li>") == 5 and "+00:00" not in change
    listing = admin_client.get("/admin/agents_app/schedule/").content.decode()
    assert "Every weekday (Monday to Friday) at 09:00, Europe/Paris time" in listing
    assert "09:00 (Europe/Paris)" in listing  # the next run, in the schedule's zone


def test_a_wrong_timing_and_a_wrong_zone_are_both_reported_in_words(
    admin_client: Client, form: dict[str, Any]
) -> None:
    cases = [
        ({"repeat": "daily", "at": "25:99"}, "at", "like 09:30"),
        ({"repeat": "weekly", "at": "09:00", "days": []}, "days", "Tick at least one day"),
        ({"repeat": "advanced", "cron": "61 * * *"}, "cron", "This cron expression cannot"),
        ({"repeat": "minutes", "every": ""}, "every", "How many minutes"),
    ]
    for fields, field, words in cases:
        response = post(admin_client, ADD, fill(dict(form), timezone="Europe/Pariss", **fields))
        errors = errors_of(response)
        assert set(errors) == {field, "timezone"}, errors
        assert words in errors[field][0], errors
        assert "There is no time zone called “Europe/Pariss”" in errors["timezone"][0]
        assert "Please correct the errors below" in response.content.decode()
    assert not Schedule.objects.exists()


def test_too_often_is_refused_with_the_minimum_in_words(
    admin_client: Client, form: dict[str, Any], settings: Any
) -> None:
    settings.STUDIO_SCHEDULE_MIN_INTERVAL_SECONDS = 300
    response = post(admin_client, ADD, fill(form, repeat="minutes", every="2"))
    assert errors_of(response) == {
        "every": [
            "A schedule runs at most once every 5 min and at least once a year: choose a "
            "number in between."
        ]
    }
    response = post(admin_client, ADD, fill(form, repeat="advanced", cron="* * * * *"))
    assert "runs 1 min apart" in errors_of(response)["cron"][0].lower()
    assert "cron:" not in errors_of(response)["cron"][0]


def test_changing_only_the_message_needs_no_confirmation(
    admin_client: Client, form: dict[str, Any]
) -> None:
    _confirm(admin_client, fill(form, repeat="daily", at="07:00"))
    row = Schedule.objects.get()
    url = f"/admin/agents_app/schedule/{row.pk}/change/"
    saved = post(admin_client, url, fill(read_form(admin_client, url), message="New words"))
    assert saved.status_code == 302, errors_of(saved)
    row.refresh_from_db()
    assert row.message == "New words" and row.cron == "0 7 * * *"


def test_run_rows_are_titled_in_words_in_the_schedules_zone(
    admin_client: Client, form: dict[str, Any]
) -> None:
    _confirm(admin_client, fill(form, repeat="daily", at="09:00"))
    row = Schedule.objects.get()
    due = datetime(2030, 12, 3, 8, 0, tzinfo=UTC)  # 09:00 in Paris
    ScheduleRun.objects.create(
        schedule=row, due_at=due, claimed_at=due, status="failed", error="Budget used up."
    )
    run = ScheduleRun.objects.get()
    assert str(run) == "Run of Tue 3 Dec 2030 09:00 (Europe/Paris)"
    page = admin_client.get(f"/admin/agents_app/schedule/{row.pk}/change/").content.decode()
    assert "Run of Tue 3 Dec 2030 09:00 (Europe/Paris)" in page
    assert "Could not start" in page and "Budget used up." in page
    assert due.isoformat() not in page and str(run.pk) not in page.split("runs-0-id")[0][-400:]


def test_timing_in_words_and_back() -> None:
    spec = ScheduleSpec("0 9 * * 1,3,5", "Asia/Tokyo", None)
    assert timing.describe(spec) == "Every Monday, Wednesday and Friday at 09:00, Asia/Tokyo time"
    assert timing.from_spec(spec) == timing.Timing("weekly", at=time(9, 0), days=["1", "3", "5"])
    assert timing.describe(ScheduleSpec("", "UTC", 5400)).startswith("Every 90 minutes")
    odd = ScheduleSpec("0 9 1-7 * 1", "UTC", None)  # a library explains what no preset makes
    assert timing.from_spec(odd).repeat == "advanced"
    assert "cron 0 9 1-7 * 1" in timing.describe(odd) and timing.describe(odd).startswith("At")
    this_year = datetime(datetime.now(UTC).year, 6, 2, 7, 5, tzinfo=UTC)
    assert timing.in_zone(this_year, "Europe/Paris").endswith(" 2 Jun 09:05")
    assert timing.in_zone(this_year - timedelta(days=366), "UTC").split()[3].isdigit()
