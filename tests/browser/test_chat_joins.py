"""Issue #40 item 2: a client that joins while a reply streams gets it from its first word.

A chat reload, a second tab and the studio's live inspector opened mid-reply show the reply's
beginning before it completes; a plain WebSocket client (what the reference client's
``useThread`` opens) is sent the reply's pending row with the text so far, then the rest as
chunks: together exactly the stored reply, nothing twice, nothing missing.
"""

from __future__ import annotations

import json
import time

from playwright.sync_api import Browser, Page, expect
from websockets.sync.client import connect

from tests.browser.support import ADMIN_PASSWORD, Site, admin_login, call_api, chat_login, shot

expect.set_options(timeout=20_000)

# About 25 s at 6 characters every 60 ms: long enough to join in the middle.
REPLY = " ".join(f"Word{i}" for i in range(400))
DEFINE = f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="joiner-model", provider="test", model="scripted",
                        script=[{{"content": {REPLY!r}}}] * 20,
                        streaming={{"chunkSize": 6, "chunkDelayMs": 60}})
prompt = PromptDefinition(name="joiner-prompt", model="joiner-model", prompt="Hi.")
agent = AgentDefinition(name="joiner", title="Joiner", side_a=SideConfig(prompt="joiner-prompt"))
save_definitions([("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False)
"""

STREAMING = '[data-streaming="true"] .msg-body'


def _streamed_prefix(page: Page, selector: str = STREAMING) -> str:
    text = " ".join(page.locator(selector).first.inner_text().split())
    return text


def _assert_prefix(text: str) -> None:
    """What is shown is the reply's beginning, once: no part twice, no hole."""
    assert text.startswith("Word0 Word1 Word2"), text[:80]
    assert REPLY.startswith(text) or REPLY.startswith(text.rstrip("…").strip()), text[:200]


def test_a_reload_and_a_second_tab_mid_reply_show_it_from_the_first_word(
    page: Page, site: Site, browser: Browser
) -> None:
    site.python(DEFINE)
    chat_login(page, site, "alice", then="/chat/?agent=joiner")
    box = page.get_by_label("Message")
    box.fill("Tell me everything")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator(STREAMING)).to_contain_text("Word30")

    # A reload in the middle of the reply: its first words are back before it completes.
    page.reload()
    expect(page.locator(STREAMING)).to_contain_text("Word0 Word1 Word2")
    _assert_prefix(_streamed_prefix(page))
    page.set_viewport_size({"width": 1440, "height": 900})
    shot(page, "chat-join-mid-reply-reload")

    # A second tab of the same person, opened mid-reply.
    other = page.context.new_page()
    other.emulate_media(color_scheme="dark")
    other.set_viewport_size({"width": 390, "height": 844})
    other.goto(page.url)
    expect(other.locator(STREAMING)).to_contain_text("Word0 Word1 Word2")
    _assert_prefix(_streamed_prefix(other))
    shot(other, "chat-join-mid-reply-second-tab-dark-phone")
    # It keeps streaming on from there, without a hole.
    expect(other.locator(STREAMING)).to_contain_text("Word200")
    _assert_prefix(_streamed_prefix(other))

    # The studio's live inspector opened mid-reply.
    thread_id = page.url.rsplit("/t/", 1)[1].split("?")[0]
    staff = browser.new_context().new_page()
    admin_login(staff, site, "admin", ADMIN_PASSWORD)
    staff.goto(f"{site.url}/admin/agents_app/thread/{thread_id}/inspect/")
    inspector = "#transcript article.msg-assistant[data-streaming=true] .msg-body"
    expect(staff.locator(inspector)).to_contain_text("Word0 Word1 Word2")
    _assert_prefix(_streamed_prefix(staff, inspector))
    shot(staff, "studio-inspector-join-mid-reply")

    # When it completes, every view holds the reply exactly once.
    for view in (page, other):
        done = view.locator("article.msg-assistant[data-status=completed] .msg-body")
        expect(done).to_contain_text("Word399", timeout=60_000)
        assert " ".join(done.inner_text().split()) == REPLY
    staff.context.close()


def test_a_socket_opened_mid_reply_is_sent_the_text_so_far_then_the_rest(site: Site) -> None:
    site.python(DEFINE)
    created = call_api(site, "bob", "POST", "/api/threads", {"agent_id": "joiner"})
    thread_id = str(created["threadId"])
    call_api(
        site,
        "bob",
        "POST",
        f"/api/threads/{thread_id}/messages",
        {"role": "user", "content": "Go on"},
    )
    time.sleep(4)  # well into the reply (about 25 s long)
    url = site.url.replace("http", "ws", 1) + f"/api/threads/{thread_id}/stream"
    headers = {"Authorization": f"Bearer {site.api_key('bob')}"}
    received: list[dict] = []
    with connect(url, additional_headers=headers) as socket:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            frame = json.loads(socket.recv(timeout=30))
            received.append(frame)
            data = frame.get("data") or {}
            kind, status = frame.get("type"), data.get("status")
            if kind == "message_data" and status == "completed" and data.get("role") == "assistant":
                break
    first = received[0]
    assert first["type"] == "message_data" and first.get("catch_up") is True, first
    assert first["data"]["status"] == "pending" and first["data"]["role"] == "assistant"
    so_far = first["data"]["content"]
    assert so_far.startswith("Word0 Word1 Word2") and len(so_far) > 100, so_far[:80]
    reply_id = first["message_id"]
    chunks = [
        f["chunk"]
        for f in received
        if f.get("type") == "message_chunk" and f.get("message_id") == reply_id
    ]
    assert chunks, "nothing streamed after the catch-up"
    stored = received[-1]["data"]["content"]
    assert stored == REPLY
    # The catch-up and the chunks after it are the reply: no text twice, none missing.
    assert so_far + "".join(chunks) == REPLY
