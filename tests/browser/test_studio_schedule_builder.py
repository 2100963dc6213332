"""Issue #55 item 3 in Chromium: a schedule made without cron. "Repeat" shows only the fields
it uses, the next five runs come back as a neutral confirmation box (no red error note),
after saving they read in the schedule's zone, and a wrong time and a wrong zone are both
reported at once. Screenshots at 1440 and 390 px, light and dark."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import _new_page
from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)


@pytest.fixture
def paris_page(browser: Browser) -> Iterator[Page]:
    """A reader in Paris: a new schedule starts in the browser's own zone."""
    yield from _new_page(
        browser, viewport={"width": 1440, "height": 900}, timezone_id="Europe/Paris"
    )


def _start(page: Page, site: Site, name: str) -> None:
    page.goto(f"{site.url}/admin/agents_app/schedule/add/")
    page.locator("#id_name").fill(name)
    page.locator("#id_agent").select_option(label="support_agent")
    page.locator("#id_message").fill("Send me the morning summary.")


def test_a_weekly_schedule_without_cron(site: Site, paris_page: Page) -> None:
    page = paris_page
    admin_login(page, site)
    _start(page, site, "weekly summary")
    expect(page.locator("#id_timezone")).to_have_value("Europe/Paris")
    expect(page.locator("#id_cron")).to_be_hidden()  # cron waits under Advanced
    page.locator("#id_repeat").select_option("weekly")
    expect(page.locator(".form-row.field-every")).to_be_hidden()
    page.locator("#id_at").fill("09:00")
    page.get_by_label("Monday").check()
    page.get_by_label("Thursday").check()
    shot(page, "studio-schedule-builder-1440")
    page.get_by_role("button", name="Save", exact=True).click()

    confirm = page.locator("#schedule-confirm")
    expect(confirm).to_be_visible()
    expect(page.locator(".errornote")).to_have_count(0)
    expect(confirm).to_contain_text("Every Monday and Thursday at 09:00, Europe/Paris time")
    expect(confirm.locator("li")).to_have_count(5)
    for item in confirm.locator("li").all_text_contents():
        assert re.fullmatch(r"(Mon|Thu) \d{1,2} \w{3}( \d{4})? 09:00", item), item
    shot(page, "studio-schedule-confirm-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-schedule-confirm-390")
    page.set_viewport_size({"width": 1440, "height": 900})
    confirm.get_by_role("button", name=re.compile("these times are right")).click()

    expect(page.locator(".messagelist .success")).to_be_visible()
    row = page.locator("#result_list tr", has_text="weekly summary")
    expect(row).to_contain_text("Every Monday and Thursday at 09:00, Europe/Paris time")
    expect(row).to_contain_text(re.compile(r"(Mon|Thu) \d{1,2} \w{3}.*09:00 \(Europe/Paris\)"))
    shot(page, "studio-schedule-list-1440")
    row.get_by_role("link", name="weekly summary").click()
    expect(page.locator("#id_repeat")).to_have_value("weekly")
    runs = page.locator(".field-next_runs li")
    expect(runs).to_have_count(5)
    assert "+00:00" not in page.content()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            shot(page, f"studio-schedule-saved-{scheme}-{width}")
    assert not page.console_errors  # type: ignore[attr-defined]


def test_a_wrong_time_and_a_wrong_zone_are_both_reported(site: Site, page: Page) -> None:
    admin_login(page, site)
    _start(page, site, "broken timing")
    page.locator("#id_repeat").select_option("advanced")
    expect(page.locator("#id_cron")).to_be_visible()
    expect(page.locator("#id_at")).to_be_hidden()
    page.locator("#id_cron").fill("0 25 * * *")
    page.locator("#id_timezone").fill("Mars/Olympus")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".field-cron .errorlist")).to_contain_text("cannot be read")
    expect(page.locator(".field-timezone .errorlist")).to_contain_text(
        "There is no time zone called “Mars/Olympus”"
    )
    expect(page.locator("#schedule-confirm")).to_have_count(0)
    shot(page, "studio-schedule-errors-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-schedule-errors-390")
