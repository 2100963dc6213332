"""The thread list (newest activity first, with previews) and the chat on a phone."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, call_api, chat_login, shot, wait_for_messages

# First replies wait for the worker to start on a busy machine.
expect.set_options(timeout=15_000)


def _say(site: Site, user: str, thread_id: str, text: str, replies: int) -> None:
    call_api(
        site, user, "POST", f"/api/threads/{thread_id}/messages", {"role": "user", "content": text}
    )
    wait_for_messages(
        site,
        user,
        thread_id,
        lambda rows: (
            sum(r["role"] == "assistant" and r["status"] == "completed" for r in rows) >= replies
        ),
    )


def test_threads_are_listed_newest_activity_first_with_a_preview(page: Page, site: Site) -> None:
    slow = call_api(site, "charlie", "POST", "/api/threads", {"agent_id": "slowpoke"})["threadId"]
    greet = call_api(site, "charlie", "POST", "/api/threads", {"agent_id": "greeter"})["threadId"]
    _say(site, "charlie", slow, "one", 1)
    _say(site, "charlie", greet, "hi", 1)
    _say(site, "charlie", slow, "two", 2)  # the slowpoke thread is the most recent again

    chat_login(page, site, "charlie")
    # The site is shared with other files' tests, which may give charlie threads of their own:
    # this test's two threads are found by id, and their order is their places in the list.
    slow_link = page.locator(f'#thread-list a.thread-link[data-thread-id="{slow}"]')
    greet_link = page.locator(f'#thread-list a.thread-link[data-thread-id="{greet}"]')
    expect(slow_link).to_have_count(1)
    expect(greet_link).to_have_count(1)
    order = page.locator("#thread-list a.thread-link").evaluate_all(
        "links => links.map(a => a.dataset.threadId)"
    )
    assert order.index(slow) < order.index(greet), order
    listed = call_api(site, "charlie", "GET", "/api/threads?sort=activity")["threads"]
    previews = {t["id"]: t["last_message_preview"] for t in listed}
    assert previews[slow] and previews[greet]
    expect(slow_link.locator(".thread-preview")).to_have_text(previews[slow])
    expect(greet_link.locator(".thread-preview")).to_have_text(previews[greet])
    shot(page, "chat-thread-list")

    greet_link.click()
    page.wait_for_url(f"**/chat/t/{greet}")
    expect(page.get_by_role("heading", level=1)).to_have_text("greeter")
    expect(page.locator("article.msg-assistant")).to_have_text(
        re.compile("Hello Alice! How can I help you today?")
    )
    expect(page.locator(f'#thread-list a[data-thread-id="{greet}"]')).to_have_attribute(
        "aria-current", "page"
    )
    shot(page, "chat-thread")


def test_chat_works_at_phone_width(phone_page: Page, site: Site) -> None:
    page = phone_page
    chat_login(page, site, "alice", then="/chat/?agent=greeter")
    shot(page, "chat-phone-new")
    box = page.get_by_label("Message")
    box.fill("Hi there")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("article.msg-assistant")).to_contain_text(
        "Hello Alice! How can I help you today?"
    )
    expect(page.locator("article.msg-user")).to_contain_text("Hi there")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "chat-phone-thread")

    toggle = page.get_by_role("button", name="Chats")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#thread-list a.thread-link").first).to_be_visible()
    shot(page, "chat-phone-threads")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_a_new_chat_is_listed_with_its_first_message_while_the_reply_is_coming(
    page: Page, site: Site
) -> None:
    # mcp-sleeper takes 40 s to answer: the list must not wait for the end of the session.
    chat_login(page, site, "bob", then="/chat/?agent=mcp-sleeper")
    box = page.get_by_label("Message")
    box.fill("Are you there?")
    box.press("Enter")
    page.wait_for_url(re.compile(r"/chat/t/"))
    thread_id = page.url.rsplit("/", 1)[-1]
    listed = page.locator(f'#thread-list a[data-thread-id="{thread_id}"] .thread-preview')
    expect(listed).to_have_text("Are you there?")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(f'#thread-list a[data-thread-id="{thread_id}"]')).to_be_visible()
    expect(page.locator("#state")).to_have_attribute("data-state", "stopped")
    # The suite shares one site: leave bob's threads as they were. The stopped session may
    # still write its last rows as it ends; the delete waits for them.
    site.python(
        "import time\n"
        "from django.db import IntegrityError\n"
        "from agents_app.models import Thread\n"
        "for _ in range(100):\n"
        "    try:\n"
        f"        Thread.objects.filter(pk={thread_id!r}).delete()\n"
        "        break\n"
        "    except IntegrityError:\n"
        "        time.sleep(0.2)\n"
        "else:\n"
        "    raise RuntimeError('the thread is still being written to')\n"
    )
