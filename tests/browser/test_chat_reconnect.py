"""A dropped socket during a streaming reply: the page reconnects, catches up over HTTP and
shows every message exactly once, nothing missing."""

from __future__ import annotations

from collections import Counter

from playwright.sync_api import Page, expect

from tests.browser.support import Site, call_api, chat_login, shot

# First replies wait for the worker to start on a busy machine.
expect.set_options(timeout=15_000)

FINAL_END = "Is there anything else I can do for you?"


def test_a_dropped_connection_catches_up_without_duplicates_or_gaps(page: Page, site: Site) -> None:
    chat_login(page, site, "bob", then="/chat/?agent=support_agent&test_hooks=1")
    box = page.get_by_label("Message")
    box.fill("Where is my order A-1001?")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    thread_id = page.url.rsplit("/t/", 1)[1].split("?")[0]

    # As soon as the answer starts streaming, the socket goes away for a while: the rest of
    # the reply (its chunks and its final row) happens while the page is not listening.
    expect(page.locator('[data-streaming="true"] .msg-body')).not_to_be_empty()
    page.evaluate("window.chatTest.drop(3000)")
    expect(page.locator("#state")).to_contain_text("Reconnecting")
    shot(page, "chat-reconnecting")

    reply = page.locator("article.msg-assistant").filter(has_text=FINAL_END)
    expect(reply).to_be_visible(timeout=20_000)
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")

    rows = call_api(site, "bob", "GET", f"/api/threads/{thread_id}/messages?limit=200")["messages"]
    shown = page.eval_on_selector_all(
        "#transcript [data-message-id]", "nodes => nodes.map(n => n.dataset.messageId)"
    )
    assert [n for n, c in Counter(shown).items() if c > 1] == []
    # Tool results are shown inside their call's block, everything else as its own element.
    expected = {r["id"] for r in rows if r["role"] != "tool"}
    assert set(shown) == expected
    final = next(r for r in rows if r["role"] == "assistant" and FINAL_END in (r["content"] or ""))
    body = page.locator(f'[data-message-id="{final["id"]}"] .msg-body')
    assert body.inner_text().strip() == final["content"]
    expect(page.locator(".tool-line")).to_have_text("Used lookup order")
    assert page.console_errors == []  # type: ignore[attr-defined]
