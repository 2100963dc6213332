"""Issue #55 item 7 in Chromium: the dashboard starts with what to do. At 1440×900 and at
390×844, light and dark, the configure shortcuts and "Needs attention" (here a paused
schedule with its reason and a failed session) are on the first screen; the figures and
charts come after them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import ARTIFACTS, Site, admin_login, shot

expect.set_options(timeout=20_000)

SETUP = """
from django.contrib.auth import get_user_model
from agents_app.models import Agent, Schedule, Thread, ThreadSession
agent = Agent.objects.get(name="support_agent")
owner = get_user_model().objects.get(username="ops")
Schedule.objects.create(agent=agent, owner=owner, name="first-screen digest",
    message="Summarise", interval_seconds=3600, paused=True,
    paused_reason="Its owner's account was deactivated: it waits for an admin to hand it on.")
thread = Thread.objects.create(agent=agent, origin_agent=agent, owner=owner,
    display_name="first-screen-seed")
ThreadSession.objects.create(thread=thread, status="failed", stop_reason="step_error")
"""
TEARDOWN = """
from agents_app.models import Schedule, Thread
Schedule.objects.filter(name="first-screen digest").delete()
Thread.objects.filter(display_name="first-screen-seed").delete()
"""
SIZES = ((1440, 900), (390, 844))


@pytest.fixture
def attention(site: Site) -> Iterator[None]:
    site.python(SETUP)
    yield
    site.python(TEARDOWN)


def test_shortcuts_and_attention_are_on_the_first_screen(
    site: Site, page: Page, attention: None
) -> None:
    admin_login(page, site)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{site.url}/admin/")
            setup = page.locator("#studio-shortcuts")
            needs = page.locator("#studio-attention")
            for label in ("Agents", "Prompts", "Models", "Env values", "Schedules"):
                tile = setup.locator(".studio-shortcut-open", has_text=re.compile(f"^{label} \\d"))
                expect(tile).to_be_in_viewport()
            expect(needs.get_by_role("heading", name="Needs attention")).to_be_in_viewport()
            paused = needs.locator(".attention-schedule", has_text="first-screen digest")
            expect(paused).to_contain_text("is paused")
            expect(paused).to_contain_text("Its owner's account was deactivated")
            failed = needs.locator(".attention-session").first
            expect(failed).to_contain_text("failed")
            expect(needs.locator(".attention-session", has_text="A step failed")).not_to_have_count(
                0
            )
            box = setup.bounding_box()
            assert box is not None and box["y"] + box["height"] <= height, (width, box)
            attention_top = needs.bounding_box()
            assert attention_top is not None and attention_top["y"] + 60 <= height
            charts = page.locator("#usage-charts").bounding_box()
            assert charts is not None and charts["y"] > box["y"] + box["height"]
            overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
            assert overflow <= 1, f"the dashboard scrolls sideways by {overflow} px at {width}"
            # The first screen as a person sees it (the viewport), and the whole page.
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            name = f"studio-dashboard-first-screen-{width}-{scheme}"
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
            shot(page, f"studio-dashboard-whole-{width}-{scheme}")
