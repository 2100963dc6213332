"""Issue #40 items 1 and 3: a failed reply says why in words (staff get a link to its log);
a stop reads as stopped, keeps what streamed, and is not counted as a failure."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.browser.support import (
    ADMIN_PASSWORD,
    Site,
    call_api,
    chat_login,
    shot,
    wait_for_messages,
)

expect.set_options(timeout=15_000)

# A scripted model per way of failing: the vendor edge answers with the provider's error.
AGENTS = {
    "unreachable": {
        "error": {"message": "Could not reach OpenAI at http://127.0.0.1:9/v1", "code": "network"}
    },
    "key-refused": {"error": {"message": "Incorrect API key provided", "status": 401}},
}
DEFINE = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
items = []
for name, script, streaming in {specs!r}:
    model = ModelDefinition(name=f"{{name}}-model", provider="test", model="scripted",
                            script=script, streaming=streaming)
    prompt = PromptDefinition(name=f"{{name}}-prompt", model=model.name, prompt="Hi.",
                              include_chat=True)
    agent = AgentDefinition(name=name, title=name.replace("-", " ").title(),
                            side_a=SideConfig(prompt=prompt.name))
    items += [(model.name, model), (prompt.name, prompt), (name, agent)]
save_definitions(items, strict_code_names=False)
"""
LONG_REPLY = " ".join(f"Word{i}" for i in range(400))


def define(site: Site, specs: list[tuple[str, list[dict], dict | None]]) -> None:
    site.python(DEFINE.format(specs=specs))


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def test_a_failed_reply_says_why_in_words(page: Page, site: Site) -> None:
    define(site, [(name, [step], None) for name, step in AGENTS.items()])
    chat_login(page, site, "alice", then="/chat/?agent=unreachable")
    _send(page, "Hello?")
    page.wait_for_url("**/chat/t/**")
    reply = page.locator("article.msg-assistant[data-status=failed]")
    expect(reply).to_have_count(1)
    expect(reply.locator(".msg-outcome")).to_have_text(
        "The AI service could not be reached, so there is no reply."
    )
    expect(reply.locator(".failure-reason")).to_have_attribute("title", "Error code: network")
    expect(reply).not_to_contain_text("interrupted")
    expect(page.locator("#state")).to_contain_text("could not be reached")
    # A person who is not staff gets no link into the studio.
    expect(reply.locator("a.failure-log")).to_have_count(0)
    page.set_viewport_size({"width": 1440, "height": 900})
    shot(page, "chat-failure-unreachable")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_staff_see_the_refused_key_with_a_link_to_the_log(page: Page, site: Site) -> None:
    define(site, [("key-refused", [AGENTS["key-refused"]], None)])
    chat_login(page, site, "admin", password=ADMIN_PASSWORD, then="/chat/?agent=key-refused")
    _send(page, "Hello?")
    page.wait_for_url("**/chat/t/**")
    reply = page.locator("article.msg-assistant[data-status=failed]")
    expect(reply.locator(".msg-outcome")).to_contain_text("refused the API key")
    link = reply.locator("a.failure-log")
    expect(link).to_have_text("See the log")
    expect(link).to_have_attribute(
        "href", re.compile(r"^/admin/agents_app/log/[0-9a-f-]+/change/$")
    )
    page.set_viewport_size({"width": 1440, "height": 900})
    shot(page, "chat-failure-key-refused-staff")
    link.click()
    expect(page.locator("body")).to_contain_text("Incorrect API key provided")


def test_phone_shows_the_failure_reason(phone_page: Page, site: Site) -> None:
    define(site, [("unreachable", [AGENTS["unreachable"]], None)])
    chat_login(phone_page, site, "bob", then="/chat/?agent=unreachable")
    _send(phone_page, "Hello?")
    phone_page.wait_for_url("**/chat/t/**")
    expect(phone_page.locator(".msg-outcome")).to_contain_text("could not be reached")
    shot(phone_page, "chat-failure-unreachable-phone")


STOPPED_COUNT = """
from agents_app.models import Log
logs = Log.objects.filter(thread_id="{thread}", kind="llm")
print(json.dumps([[l.error, l.error_type] for l in logs]))
"""


def test_stop_keeps_the_partial_reply_and_reads_as_stopped(page: Page, site: Site) -> None:
    define(
        site,
        [
            (
                "chatterbox",
                [{"content": LONG_REPLY}, {"content": "Short answer."}],
                {"chunkSize": 6, "chunkDelayMs": 60},
            )
        ],
    )
    chat_login(page, site, "alice", then="/chat/?agent=chatterbox")
    _send(page, "Tell me everything")
    page.wait_for_url("**/chat/t/**")
    thread_id = page.url.rsplit("/t/", 1)[1].split("?")[0]
    streaming = page.locator('[data-streaming="true"] .msg-body')
    expect(streaming).to_contain_text("Word12")
    page.get_by_role("button", name="Stop").click()
    state = page.locator("#state")
    expect(state).to_have_attribute("data-state", "stopped")
    reply = page.locator("article.msg-assistant").first
    expect(reply.locator(".badge.stopped")).to_have_text("stopped")
    expect(reply.locator(".badge.error")).to_have_count(0)
    expect(reply.locator(".msg-outcome")).to_have_text("You stopped this reply here.")
    expect(reply.locator(".msg-body")).to_contain_text("Word0 Word1 Word2")
    page.set_viewport_size({"width": 1440, "height": 900})
    shot(page, "chat-stop-keeps-partial")

    rows = wait_for_messages(
        site,
        "alice",
        thread_id,
        lambda ms: any(m["role"] == "system" for m in ms),
    )
    kept = [m for m in rows if m["role"] == "assistant"]
    assert len(kept) == 1, rows
    assert kept[0]["status"] == "completed"
    assert kept[0]["metadata"].get("stopped_by_user") is True
    assert kept[0]["content"].startswith("Word0 Word1 Word2")
    assert kept[0]["content"] in LONG_REPLY
    # Reloaded, it reads the same.
    page.reload()
    expect(page.locator("article.msg-assistant .badge.stopped")).to_have_count(1)
    expect(page.locator("article.msg-assistant .msg-body")).to_contain_text("Word0 Word1")
    # Nowhere counted as a failure: the request's log has no error.
    printed = site.python("import json\n" + STOPPED_COUNT.format(thread=thread_id))
    logs = json.loads(printed.strip().splitlines()[-1])
    assert logs and all(error == "" for error, _ in logs), logs
    # And the conversation goes on: the kept text is part of it.
    _send(page, "Short please")
    expect(page.locator("article.msg-assistant").filter(has_text="Short answer.")).to_be_visible()
    call_api(site, "alice", "GET", f"/api/threads/{thread_id}")
