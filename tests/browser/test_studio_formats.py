"""Issue #40 item 9: the studio speaks in human formats (money to the cent or "< $0.01",
durations, local times, reasons in words with the code in a tooltip), and the Logs list is
newest first with its Error, Cost and Latency on screen at 1440 px and on a phone."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)

SETUP = """
from decimal import Decimal
from agents_app.models import Agent, Log, Thread
from agents_app.models.timestamps import now_us
agent = Agent.objects.get(name="support_agent")
# A preview with no place to break (a pasted URL or token): the list must still fit a phone.
thread = Thread.objects.create(agent=agent, origin_agent=agent, display_name="fmt-seed",
    last_message_preview="https://example.org/" + "unbroken" * 8)
now = now_us()
Log.objects.create(thread=thread, model="fmt-old-model", prompt_name="support_prompt",
    finish_reason="tool_calls", cost_total=Decimal("0.000061500000"), latency_ms=1234,
    total_tokens=1500, created_at=now - 3_600_000_000, is_complete=True)
Log.objects.create(thread=thread, model="fmt-new-model", prompt_name="support_prompt",
    error="could not reach the provider", error_type="step_error", status_code=502,
    cost_total=Decimal("1.234567"), latency_ms=65_000, created_at=now)
"""


@pytest.fixture(autouse=True)
def no_spend_left_behind(site: Site) -> Iterator[None]:
    """The seeded logs cost $1.23 today: deleted after each test, so the dashboard tests that
    share this browser stack see only their own spend."""
    yield
    site.python(
        "from agents_app.models import Thread; Thread.objects.filter(display_name='fmt-seed').delete()"
    )


def test_logs_read_as_people_read(site: Site, page: Page) -> None:
    site.python(SETUP)
    admin_login(page, site)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{site.url}/admin/agents_app/log/?q=fmt-")
            rows = page.locator("#result_list tbody tr")
            expect(rows).to_have_count(2)
            newest, older = rows.nth(0), rows.nth(1)
            expect(newest).to_contain_text("fmt-new-model")  # newest first
            expect(newest).to_contain_text("$1.23")
            expect(newest).to_contain_text("1 min 5 s")
            expect(newest.locator("[title=step_error]")).to_have_text(re.compile("A step failed"))
            expect(older).to_contain_text("< $0.01")
            expect(older).to_contain_text("1.2 s")
            expect(older.locator("[title=tool_calls]")).to_have_text("Called tools")
            body = page.locator("#result_list").inner_text()
            assert "0.0000615" not in body and "$0.000000" not in body
            assert not re.search(r"\d{2}:\d{2}:\d{2}\.\d+", body), "microseconds shown"
            # Error, Cost and Latency are on screen, and the page does not scroll sideways.
            for column in ("shown_outcome", "shown_cost", "shown_latency"):
                box = newest.locator(f"td.field-{column}").bounding_box()
                assert box is not None and box["x"] + box["width"] <= width + 1, column
            overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
            assert overflow <= 1, f"the page scrolls sideways by {overflow} px at {width} px"
            shot(page, f"studio-logs-{width}-{scheme}")
    # A failed request's page says it failed, not "Is complete ✓".
    page.locator("#result_list tbody tr").first.locator("th a, td a").first.click()
    expect(page.locator(".fieldBox.field-shown_complete")).to_contain_text("No: it failed")


SESSION = """
from agents_app.models import Agent, Thread, ThreadSession
agent = Agent.objects.get(name="support_agent")
thread = Thread.objects.create(agent=agent, origin_agent=agent, display_name="fmt-seed")
ThreadSession.objects.create(thread=thread, owner="vm:9764:375a40", status="failed",
    stop_reason="step_error")
"""


def test_sessions_read_as_people_read(site: Site, page: Page) -> None:
    site.python(SESSION)
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/threadsession/?q=375a40")
    row = page.locator("#result_list tbody tr").first
    expect(row.locator("[title='vm:9764:375a40']")).to_have_text("process 9764 on vm")
    expect(row.locator("[title=step_error]")).to_have_text("A step failed")
    assert not re.search(r"\d{2}:\d{2}:\d{2}\.\d+", row.inner_text())


def test_lists_fit_a_phone(site: Site, phone_page: Page) -> None:
    """The agents, threads and logs lists keep to a 390 px screen: no sideways scrolling of
    the page or of the list (secondary columns are left to the row's own page)."""
    site.python(SETUP)  # a thread and its logs, so no list is empty
    admin_login(phone_page, site)
    for model in ("agent", "thread", "log"):
        phone_page.goto(f"{site.url}/admin/agents_app/{model}/")
        expect(phone_page.locator("#result_list")).to_be_visible()
        wide = phone_page.evaluate(
            """() => {
                const box = document.querySelector('#changelist .results');
                return [document.scrollingElement.scrollWidth - innerWidth,
                        box.scrollWidth - box.clientWidth];
            }"""
        )
        assert wide[0] <= 1 and wide[1] <= 1, f"{model} list scrolls sideways: {wide}"
        shot(phone_page, f"studio-{model}-list-390")
