"""Done-when (2): a user chats with a tool-using agent, sees the tool block and the answer
stream in, stops a slow reply and carries on."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, chat_login, frames, shot

# First replies wait for the worker to start on a busy machine.
expect.set_options(timeout=15_000)

FINAL = (
    "Good news: order A-1001 (a blue ceramic teapot and two stoneware mugs) shipped on 3 March"
    " with ParcelPost, tracking number PP-55821. It should arrive by 6 March. Is there anything"
    " else I can do for you?"
)

# Every text the streaming reply showed, recorded by the page itself as the DOM changes.
RECORD_PARTIALS = """
window.__partials = [];
new MutationObserver(() => {
  const body = document.querySelector('[data-streaming="true"] .msg-body');
  const text = body ? body.textContent : null;
  const seen = window.__partials;
  if (text && seen[seen.length - 1] !== text) seen.push(text);
}).observe(document, { childList: true, subtree: true, characterData: true });
"""


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def test_alice_sees_the_tool_block_and_the_answer_stream_in(page: Page, site: Site) -> None:
    page.add_init_script(RECORD_PARTIALS)
    seen = frames(page)
    chat_login(page, site, "alice", then="/chat/?agent=support_agent")
    expect(page.get_by_label("Agent")).to_have_value("support_agent")
    shot(page, "chat-new-thread")

    _send(page, "Where is my order A-1001?")
    page.wait_for_url("**/chat/t/**")
    # A person who is not staff sees the call as a line (issue #40 item 10).
    tool = page.locator(".tool-line")
    expect(tool).to_be_visible()
    reply = page.locator("article.msg-assistant").filter(has_text="Is there anything else I can do")
    expect(reply).to_be_visible()
    expect(reply).not_to_have_attribute("data-streaming", "true")

    expect(tool).to_have_text("Used lookup order")
    expect(page.locator("article.msg-user")).to_contain_text("Where is my order A-1001?")
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")
    shot(page, "chat-tool-reply")

    partials = [p.strip() for p in page.evaluate("window.__partials")]
    partials = [p for p in partials if p.startswith("Good news")]
    growing = [p for p in dict.fromkeys(partials) if p != FINAL and FINAL.startswith(p)]
    assert len(growing) >= 2, partials
    chunks = [json.loads(f) for f in seen if '"message_chunk"' in f]
    assert len([c for c in chunks if c.get("type") == "message_chunk"]) >= 2


def test_alice_stops_a_slow_reply_and_continues(page: Page, site: Site) -> None:
    chat_login(page, site, "alice", then="/chat/?agent=sleeper")
    _send(page, "Wake up, please")
    page.wait_for_url("**/chat/t/**")
    state = page.locator("#state")
    expect(state).to_have_attribute("data-state", "thinking")
    # The model request is in flight: the assistant row exists, its text does not yet.
    expect(page.locator("article.msg-assistant[data-status=pending]")).to_have_count(1)
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    stop.click()
    expect(state).to_have_attribute("data-state", "stopped")
    expect(state).to_contain_text("Stopped")
    expect(page.locator(".notice-stopped")).to_have_text("Execution stopped by user")
    expect(stop).to_be_hidden()
    expect(page.get_by_role("button", name="Continue")).to_be_visible()
    shot(page, "chat-stopped")

    # Continue asks the model again: the stopped request used up no scripted reply.
    page.get_by_role("button", name="Continue").click()
    expect(state).to_have_attribute("data-state", "thinking")
    answers = page.locator("article.msg-assistant[data-status=completed]")
    expect(answers).to_have_count(1, timeout=20_000)
    expect(answers).to_have_text(re.compile("finally awake"))
    expect(state).to_have_attribute("data-state", "idle")

    _send(page, "Are you still there?")
    expect(answers).to_have_count(2, timeout=20_000)
    expect(answers.nth(1)).to_have_text(re.compile("still here"))
    expect(page.locator("article.msg-user")).to_have_count(2)
    expect(state).to_have_attribute("data-state", "idle")
    shot(page, "chat-continued")
    assert page.console_errors == []  # type: ignore[attr-defined]
