"""The chat page beyond the newest 200 messages, "Show reasoning" only where there is
reasoning, and searching one's own chats."""

from __future__ import annotations

import re
import uuid
from typing import Any

from playwright.sync_api import Page, Route, expect

from tests.browser.support import Site, chat_login, shot

expect.set_options(timeout=15_000)
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")

SEED_HISTORY = """
from agents_app.models import Agent, Message, Thread
from django.contrib.auth import get_user_model
owner = get_user_model().objects.get(username="alice")
agent = Agent.objects.get(name="greeter")
thread = Thread.objects.create(agent=agent, origin_agent=agent, owner=owner)
base = 1_700_000_000_000_000
Message.objects.bulk_create(
    Message(thread=thread, role="user" if i % 2 == 0 else "assistant",
            content=f"History line {i}", created_at=base + i * 1_000_000)
    for i in range(250)
)
thread.last_message_preview = "History line 249"
thread.save()
print(thread.pk)
"""

THINKER = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="thinker-model", provider="test", model="scripted", script=[
    {"content": "The answer is 42.", "reasoning_content": "Six times seven is forty-two."}])
prompt = PromptDefinition(name="thinker-prompt", model=model.name, prompt="Think first.",
                          reasoning={"effort": "medium"})
agent = AgentDefinition(name="thinker", title="Thinker", side_a=SideConfig(prompt=prompt.name))
save_definitions([("model", model), ("prompt", prompt), ("agent", agent)],
                 strict_code_names=False)
"""

SEED_SEARCH = """
from agents_app.models import Agent, Message, Thread
from django.contrib.auth import get_user_model
users = get_user_model().objects
agent = Agent.objects.get(name="greeter")
def thread(username, *texts):
    t = Thread.objects.create(agent=agent, origin_agent=agent, owner=users.get(username=username))
    for text in texts:
        Message.objects.create(thread=t, role="user", content=text)
    t.last_message_preview = texts[-1]
    t.save()
    return t.pk
print(thread("bob", "Is the %(word)s crossing on Main Street safe?", "Thanks, that helps."))
print(thread("bob", "Book a table for two tonight"))
print(thread("alice", "My %(word)s drawing is done"))
"""


def _seed(site: Site, code: str) -> list[str]:
    """Run ``code``; the thread ids it printed (the shell may print other lines too)."""
    return UUID.findall(site.python(code))


def older_page(url: str) -> bool:
    return "/messages?" in url and "offset=" in url


def test_scrolling_up_loads_messages_older_than_the_newest_200(page: Page, site: Site) -> None:
    (thread,) = _seed(site, SEED_HISTORY)
    chat_login(page, site, "alice", then=f"/chat/t/{thread}")
    rows = page.locator("#transcript article.msg")
    expect(rows.last).to_contain_text("History line 249")
    expect(rows).to_have_count(200)
    expect(rows.first).to_contain_text("History line 50")
    edge = page.locator("#history-edge")
    expect(edge).to_have_attribute("data-state", "more")

    # Hold the older page's request so the "loading" state can be seen, then let it through.
    held: list[Route] = []
    page.route(older_page, lambda route: held.append(route))
    transcript = page.locator("#transcript")
    transcript.evaluate("(el) => { el.scrollTop = 0; }")
    expect(edge).to_have_attribute("data-state", "loading")
    expect(edge).to_have_text("Loading older messages…")
    shot(page, "chat-history-loading")
    anchor_before = page.evaluate(
        """() => [...document.querySelectorAll('#transcript article.msg')]
            .find((n) => n.textContent.includes('History line 50')).getBoundingClientRect().top"""
    )
    assert len(held) == 1
    held[0].continue_()
    page.unroute(older_page)

    expect(rows).to_have_count(250)
    # What the reader was looking at stays where it was: older rows went in above it.
    anchor_after = page.evaluate(
        """() => [...document.querySelectorAll('#transcript article.msg')]
            .find((n) => n.textContent.includes('History line 50')).getBoundingClientRect().top"""
    )
    assert abs(anchor_after - anchor_before) <= 2, (anchor_before, anchor_after)
    assert transcript.evaluate("(el) => el.scrollTop") > 0
    texts = rows.evaluate_all(
        "(nodes) => nodes.map((n) => n.querySelector('.msg-body').textContent.trim())"
    )
    assert texts == [f"History line {i}" for i in range(250)]  # in order, none twice

    transcript.evaluate("(el) => { el.scrollTop = 0; }")
    expect(edge).to_have_attribute("data-state", "start")
    expect(edge).to_have_text("Beginning of the conversation")
    shot(page, "chat-history-beginning")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_older_messages_load_at_phone_width_too(phone_page: Page, site: Site) -> None:
    page = phone_page
    (thread,) = _seed(site, SEED_HISTORY)
    chat_login(page, site, "alice", then=f"/chat/t/{thread}")
    rows = page.locator("#transcript article.msg")
    expect(rows).to_have_count(200)
    page.locator("#transcript").evaluate("(el) => { el.scrollTop = 0; }")
    expect(rows).to_have_count(250)
    page.locator("#transcript").evaluate("(el) => { el.scrollTop = 0; }")
    expect(page.locator("#history-edge")).to_have_text("Beginning of the conversation")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "chat-phone-history-beginning")


def test_show_reasoning_is_offered_only_for_an_agent_that_reasons(page: Page, site: Site) -> None:
    site.python(THINKER)
    toggle = page.get_by_label("Show reasoning")
    chat_login(page, site, "alice", then="/chat/?agent=greeter")
    expect(page.get_by_label("Agent")).to_have_value("greeter")
    expect(toggle).to_be_hidden()
    shot(page, "chat-reasoning-hidden")

    page.get_by_label("Agent").select_option("thinker")
    expect(toggle).to_be_visible()
    toggle.check()
    box = page.get_by_label("Message")
    box.fill("What is six times seven?")
    box.press("Enter")
    reply = page.locator("article.msg-assistant")
    expect(reply).to_contain_text("The answer is 42.")
    reasoning = reply.locator("details.reasoning")
    expect(reasoning).to_be_visible()
    reasoning.locator("summary").click()
    expect(reasoning).to_contain_text("Six times seven is forty-two.")
    expect(toggle).to_be_visible()  # still there once the thread is open
    shot(page, "chat-reasoning-shown")

    # An agent that does not reason: no toggle in its thread either.
    page.goto(f"{site.url}/chat/?agent=greeter")
    box.fill("Hello")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator("article.msg-assistant")).to_contain_text("Hello")
    expect(toggle).to_be_hidden()
    assert page.console_errors == []  # type: ignore[attr-defined]


def _listed(page: Page) -> Any:
    return page.locator("#thread-list a.thread-link")


def test_search_filters_the_thread_list_to_own_matching_chats(page: Page, site: Site) -> None:
    word = f"zebra{uuid.uuid4().hex[:8]}"
    zebra, table, alices = _seed(site, SEED_SEARCH % {"word": word})
    chat_login(page, site, "bob")
    expect(page.locator(f'#thread-list a[data-thread-id="{table}"]')).to_be_visible()
    search = page.get_by_label("Search your chats")

    search.fill(word.upper())
    expect(_listed(page)).to_have_count(1)
    expect(_listed(page)).to_have_attribute("data-thread-id", zebra)
    # The words that matched, not the thread's last message ("Thanks, that helps.").
    expect(_listed(page).locator(".thread-preview")).to_contain_text(f"{word} crossing")
    expect(page.locator(f'#thread-list a[data-thread-id="{alices}"]')).to_have_count(0)
    shot(page, "chat-search")

    search.fill("no chat says this")
    expect(_listed(page)).to_have_count(0)
    expect(page.locator("#threads-status")).to_have_text("No chats match “no chat says this”.")

    search.fill("")
    expect(page.locator(f'#thread-list a[data-thread-id="{zebra}"]')).to_be_visible()
    expect(page.locator(f'#thread-list a[data-thread-id="{table}"]')).to_be_visible()
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_search_works_in_the_phone_drawer(phone_page: Page, site: Site) -> None:
    page = phone_page
    word = f"zebra{uuid.uuid4().hex[:8]}"
    zebra, _table, _alices = _seed(site, SEED_SEARCH % {"word": word})
    chat_login(page, site, "bob")
    page.get_by_role("button", name="Chats").click()
    search = page.get_by_label("Search your chats")
    expect(search).to_be_visible()
    search.fill(f"{word} crossing")
    expect(_listed(page)).to_have_count(1)
    expect(_listed(page)).to_have_attribute("data-thread-id", zebra)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "chat-phone-search")
