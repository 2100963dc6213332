"""Issue #40 item 6: a refused first message leaves no mess (the address names the agent, the
description shows once, no empty chat is left in the list), and the studio refuses a negative
spend budget with a sentence saying why."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, call_api, chat_login, shot

expect.set_options(timeout=20_000)

BUDGET = """
from django.contrib.auth import get_user_model
from agents_app.models import SpendBudget
user = get_user_model().objects.get(username="charlie")
SpendBudget.objects.update_or_create(user=user, defaults={{"monthly_limit_usd": {limit}}})
"""
DESCRIPTION = "Answers order questions for a demo tea shop"


def test_a_refused_first_message_leaves_no_mess(page: Page, site: Site) -> None:
    site.python(BUDGET.format(limit='"0"'))
    try:
        before = call_api(site, "charlie", "GET", "/api/threads?limit=200")["threads"]
        chat_login(page, site, "charlie", then="/chat/?agent=support_agent")
        expect(page.locator("#agent-select-description")).to_contain_text(DESCRIPTION)
        box = page.get_by_label("Message")
        box.fill("Where is my order A-1001?")
        box.press("Enter")
        error = page.locator("#page-error")
        expect(error).to_contain_text("Your message was not sent")
        expect(error).to_contain_text("budget")
        # What was typed stays, ready to send again; the address still names the agent.
        expect(box).to_have_value("Where is my order A-1001?")
        expect(page).to_have_url(f"{site.url}/chat/?agent=support_agent")
        assert "undefined" not in page.url
        # The description once, under the agent picker.
        expect(page.locator("#agent-picker")).to_be_visible()
        expect(page.get_by_text(DESCRIPTION)).to_have_count(1)
        expect(page.get_by_label("Agent")).to_have_value("support_agent")
        # No empty chat is left behind, in the list or on the server.
        expect(page.locator("#thread-list")).not_to_contain_text("No messages yet")
        expect(page.locator("#thread-list a")).to_have_count(len(before))
        after = call_api(site, "charlie", "GET", "/api/threads?limit=200")["threads"]
        assert len(after) == len(before), after
        page.set_viewport_size({"width": 1440, "height": 900})
        shot(page, "chat-refused-first-message")
    finally:
        site.python(BUDGET.format(limit="None"))


def test_a_negative_spend_budget_is_refused_in_words(page: Page, site: Site) -> None:
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/spendbudget/add/")
    page.fill("input[name=monthly_limit_usd]", "-5")
    page.locator("input[name=_save]").click()
    expect(page.locator(".field-monthly_limit_usd .errorlist")).to_have_text(
        "A budget cannot be negative. Enter 0 to refuse every new session, "
        "or leave it empty for no budget."
    )
    expect(page.locator("input[name=monthly_limit_usd]")).to_have_value("-5")
    page.set_viewport_size({"width": 1440, "height": 900})
    shot(page, "studio-budget-negative-refused")
