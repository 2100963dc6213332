"""Issue #41 in the chat: edit a message, regenerate a reply, move between versions with
"‹ 1 / 2 ›", continue in a new chat from any message; a second tab follows every switch live,
and the model's next request holds only the active path (its stored log body)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import (
    Site,
    admin_login,
    call_api,
    chat_login,
    shot,
    wait_for_messages,
)
from tests.integration.stack import ROOT

expect.set_options(timeout=15_000)

REPLIES = ["Paris, of course.", "Rome.", "Madrid.", "Madrid, Spain's capital.", "Lyon?"]
DEFINE = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="brancher-model", provider="test", model="scripted",
                        script=[{{"content": text}} for text in {replies!r}])
prompt = PromptDefinition(name="brancher-prompt", model=model.name, prompt="Answer briefly.",
                          include_chat=True)
agent = AgentDefinition(name="brancher", title="Brancher", side_a=SideConfig(prompt=prompt.name))
save_definitions([(model.name, model), (prompt.name, prompt), (agent.name, agent)],
                 strict_code_names=False)
"""
LAST_REQUEST = """
import json
from agents_app.models import Log
log = Log.objects.filter(thread_id="{thread}", kind="llm").order_by("-created_at").first()
print(json.dumps(log.request_body))
"""
# What a person types is shown as text: markup in an edit never becomes an element.
HOSTILE = 'Capital of <img src=x onerror="window.pwned=1"> France?'
EDITED = "And of Spain?"
IMAGE = ROOT / "docs" / "images" / "chat-branches-1440.png"


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def _said(page: Page) -> list[str]:
    """The transcript's messages as the reader sees them, top to bottom."""
    return page.locator("#transcript article.msg .msg-body").all_inner_texts()


def _last_request(site: Site, thread_id: str) -> str:
    return site.python(LAST_REQUEST.format(thread=thread_id)).strip().splitlines()[-1]


def _done(count: int):  # noqa: ANN202
    return lambda rows: len(rows) == count and all(r["status"] in (None, "completed") for r in rows)


def test_edit_regenerate_switch_and_fork_in_the_chat(page: Page, site: Site) -> None:
    site.python(DEFINE.format(replies=REPLIES))
    chat_login(page, site, "alice", then="/chat/?agent=brancher")
    _send(page, "What is the capital of France?")
    page.wait_for_url("**/chat/t/**")
    thread_id = page.url.rsplit("/t/", 1)[1].split("?")[0]
    expect(page.locator("article.msg-assistant")).to_contain_text("Paris, of course.")
    _send(page, "And of Italy?")
    expect(page.locator("article.msg-assistant").nth(1)).to_contain_text("Rome.")
    wait_for_messages(site, "alice", thread_id, _done(4))

    # A second tab on the same chat follows everything below without being reloaded.
    other = page.context.new_page()
    other.goto(page.url)
    expect(other.locator("article.msg-assistant").nth(1)).to_contain_text("Rome.")

    # Edit: the pencil opens the text; sending it makes a second version of the question.
    question = page.locator("article.msg-user").nth(1)
    question.get_by_role("button", name="Edit").click()
    box = question.get_by_label("Edited text")
    expect(box).to_have_value("And of Italy?")
    box.fill(EDITED)
    box.press("Enter")
    expect(page.locator("article.msg-assistant").nth(1)).to_contain_text("Madrid.")
    edited = page.locator("article.msg-user").nth(1)
    expect(edited.locator(".msg-body")).to_have_text(EDITED)
    expect(edited.locator(".branch-position")).to_have_text("2 / 2")
    expect(other.locator("article.msg-user").nth(1).locator(".msg-body")).to_have_text(EDITED)
    assert _said(page) == [
        "What is the capital of France?",
        "Paris, of course.",
        EDITED,
        "Madrid.",
    ]
    wait_for_messages(site, "alice", thread_id, _done(4))
    request = _last_request(site, thread_id)
    assert "What is the capital of France?" in request and "Spain?" in request
    assert "And of Italy?" not in request and "Rome." not in request

    # Regenerate: another answer to the same question, the first one kept as version 1.
    reply = page.locator("article.msg-assistant").nth(1)
    reply.get_by_role("button", name="Regenerate").click()
    answer = page.locator("article.msg-assistant").nth(1)
    expect(answer.locator(".msg-body")).to_have_text("Madrid, Spain's capital.")
    expect(answer.locator(".branch-position")).to_have_text("2 / 2")
    wait_for_messages(site, "alice", thread_id, _done(4))
    request = _last_request(site, thread_id)
    assert "Spain?" in request and "Madrid" not in request  # the old answer is not sent
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(other.locator("article.msg-assistant").nth(1)).to_contain_text("Spain's capital")
    IMAGE.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGE))
    shot(page, "chat-branches-1440")

    # Switch: back to the first version of the question, its own reply with it; the other
    # tab follows at once.
    page.locator("article.msg-user").nth(1).get_by_role("button", name="Previous version").click()
    expect(page.locator("article.msg-user").nth(1).locator(".msg-body")).to_have_text(
        "And of Italy?"
    )
    expect(page.locator("article.msg-user").nth(1).locator(".branch-position")).to_have_text(
        "1 / 2"
    )
    assert _said(page) == [
        "What is the capital of France?",
        "Paris, of course.",
        "And of Italy?",
        "Rome.",
    ]
    expect(other.locator("article.msg-user").nth(1).locator(".msg-body")).to_have_text(
        "And of Italy?"
    )
    expect(other.locator("article.msg-assistant").nth(1).locator(".msg-body")).to_have_text("Rome.")
    # The model's next request reads the path now shown.
    _send(page, "And its river?")
    expect(page.locator("article.msg-assistant").nth(2)).to_contain_text("Lyon?")
    request = _last_request(site, thread_id)
    assert "And of Italy?" in request and "Rome." in request and "And its river?" in request
    assert "Spain?" not in request and "Madrid" not in request

    # Fork: a new chat holding the conversation up to the first reply.
    page.locator("article.msg-assistant").first.get_by_role(
        "button", name="New chat from here"
    ).click()
    page.wait_for_url(lambda url: "/chat/t/" in url and thread_id not in url)
    expect(page.locator("article.msg-assistant")).to_have_count(1)
    assert _said(page) == ["What is the capital of France?", "Paris, of course."]
    expect(page.locator(f'#thread-list a[data-thread-id="{thread_id}"]')).to_be_visible()
    # The first message has versions too; what a person types stays text.
    first = page.locator("article.msg-user").first
    first.get_by_role("button", name="Edit").click()
    first.get_by_label("Edited text").fill(HOSTILE)
    first.get_by_label("Edited text").press("Enter")
    expect(page.locator("article.msg-user").first.locator(".msg-body")).to_have_text(HOSTILE)
    expect(page.locator("article.msg-user").first.locator(".branch-position")).to_have_text("2 / 2")
    expect(page.locator("article.msg-assistant")).to_have_count(1)
    assert page.locator("#transcript img").count() == 0
    assert page.evaluate("window.pwned") is None
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_staff_switch_versions_in_the_studio_inspector(page: Page, site: Site) -> None:
    site.python(DEFINE.format(replies=REPLIES))
    thread_id = call_api(site, "alice", "POST", "/api/threads", {"agent_id": "brancher"})[
        "threadId"
    ]
    base = f"/api/threads/{thread_id}"
    call_api(site, "alice", "POST", f"{base}/messages", {"content": "Capital of France?"})
    rows = wait_for_messages(site, "alice", thread_id, _done(2))
    call_api(site, "alice", "POST", f"{base}/messages/{rows[1]['id']}/regenerate")
    wait_for_messages(site, "alice", thread_id, lambda ms: ms[-1]["content"] == "Rome.")
    wait_for_messages(site, "alice", thread_id, _done(2))

    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/thread/{thread_id}/change/")
    tree = page.locator("#inspector-tree")
    expect(tree.locator(".studio-tree-node")).to_have_count(3)
    expect(tree.locator(".studio-tree-active")).to_have_count(2)
    expect(tree.locator(".studio-tree-node").nth(2)).to_contain_text("version 2 of 2")
    page.set_viewport_size({"width": 1440, "height": 900})
    tree.scroll_into_view_if_needed()
    shot(page, "studio-branches-tree-1440")
    tree.get_by_role("button", name="Show this version").click()
    expect(page.locator(".messagelist")).to_contain_text("Switched versions")
    expect(page.locator("#inspector-tree .studio-tree-node").nth(1)).to_have_class(
        re.compile("studio-tree-active")
    )
    rows = call_api(site, "alice", "GET", f"{base}/messages")["messages"]
    assert [m["content"] for m in rows] == ["Capital of France?", "Paris, of course."]
    assert page.console_errors == []  # type: ignore[attr-defined]
