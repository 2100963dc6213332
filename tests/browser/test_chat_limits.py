"""A user whose monthly spend budget is used up sees why the chat page refuses a new message."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, chat_login, shot

expect.set_options(timeout=15_000)

CLOSE_BUDGET = """
from decimal import Decimal
from django.contrib.auth import get_user_model
from agents_app.models import SpendBudget
user = get_user_model().objects.get(username="charlie")
SpendBudget.objects.update_or_create(user=user, defaults={"monthly_limit_usd": Decimal("0")})
"""
EMPTY_CHATS = """
from django.db.models import Count
from agents_app.models import Thread
threads = Thread.objects.filter(owner__username="charlie").annotate(n=Count("messages"))
print("empty:", threads.filter(n=0).count())
"""
# The browser suite shares one site: charlie chats again in later tests, which count his
# threads.
OPEN_BUDGET = """
from agents_app.models import SpendBudget, Thread
SpendBudget.objects.filter(user__username="charlie").delete()
Thread.objects.filter(owner__username="charlie").delete()
"""


def test_chat_page_shows_the_budget_refusal(page: Page, site: Site) -> None:
    site.python(CLOSE_BUDGET)
    try:
        chat_login(page, site, "charlie")
        box = page.get_by_label("Message")
        box.fill("Hello?")
        box.press("Enter")
        error = page.locator("#page-error")
        expect(error).to_contain_text(
            "monthly spend budget of $0.00 for the account charlie is used up"
        )
        expect(box).to_have_value("Hello?")  # kept, to send again later
        # The chat the refused first message started is removed, not left empty in the list.
        expect(page).to_have_url(re.compile(r"/chat/\?agent="))
        assert "empty: 0" in site.python(EMPTY_CHATS)
        shot(page, "chat-budget-exceeded")
        assert page.console_errors == []  # type: ignore[attr-defined]
    finally:
        site.python(OPEN_BUDGET)
