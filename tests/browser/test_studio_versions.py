"""Versions with rollback, in the studio: a prompt edited, tried as a draft, saved with a note,
diffed against its previous version and restored, while a session started before the edit
finishes on the old version.

The session that started before the edit waits for a tool call's approval (it is parked, no
worker holds it); the edit is saved meanwhile; once approved it resumes (a new engine, on
the worker) and its next model request must still carry the old system prompt.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, call_api, shot
from tests.integration.stack import wait_until

expect.set_options(timeout=20_000)

OLD = "You answer as version one."
DRAFT = "You answer as the drafted version two."
SCRIPT = [
    {"content": "Hello from the versioned helper."},
    {"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]},
    {"content": "Order looked up."},
]


def _define(site: Site) -> None:
    for kind, body in (
        (
            "models",
            {"name": "ver-model", "provider": "test", "model": "scripted", "script": SCRIPT},
        ),
        (
            "prompts",
            {
                "name": "ver-prompt",
                "model": "ver-model",
                "prompt": OLD,
                "includeChat": True,
                "includePastTools": True,
                "tools": [{"name": "lookup_order", "requiresApproval": True}],
            },
        ),
        (
            "agents",
            {"name": "ver-agent", "title": "Versioned helper", "sideA": {"prompt": "ver-prompt"}},
        ),
    ):
        call_api(site, "ops", "POST", f"/api/{kind}", {"definition": body, "versionNote": "First"})


def _llm_logs(site: Site, thread_id: str) -> list[dict[str, Any]]:
    rows = site.stack.sql(
        "SELECT system_prompt, definition_versions FROM agents_app_log "
        "WHERE thread_id = %s AND kind = 'llm' AND is_complete ORDER BY created_at",
        thread_id,
    )
    return [{"system_prompt": r[0], "versions": r[1]} for r in rows]


def _saved_text(site: Site) -> str:
    return str(site.stack.sql("SELECT text FROM agents_app_prompt WHERE name = 'ver-prompt'")[0][0])


def _session_status(site: Site, thread_id: str) -> list[str]:
    rows = site.stack.sql(
        "SELECT status FROM agents_app_threadsession WHERE thread_id = %s ORDER BY created_at",
        thread_id,
    )
    return [r[0] for r in rows]


def _post(site: Site, thread_id: str, text: str) -> None:
    call_api(site, "ops", "POST", f"/api/threads/{thread_id}/messages", {"content": text})


def test_a_prompt_edit_is_tried_saved_diffed_and_restored(site: Site, page: Page) -> None:
    _define(site)
    before = call_api(site, "ops", "POST", "/api/threads", {"agent_id": "ver-agent"})["threadId"]
    try:
        _run(site, page, before)
    finally:
        # The suite shares one site: leave no threads or definitions of ours behind.
        site.python(
            "from agents_app.models import Agent, LanguageModel, Prompt, Thread;"
            "Thread.objects.filter(agent__name='ver-agent').delete();"
            "Agent.objects.filter(name='ver-agent').delete();"
            "Prompt.objects.filter(name='ver-prompt').delete();"
            "LanguageModel.objects.filter(name='ver-model').delete()"
        )


def _run(site: Site, page: Page, before: str) -> None:
    # A session started before the edit: its second message asks for an approval and parks.
    _post(site, before, "Hi")
    wait_until(lambda: _session_status(site, before) == ["completed"], "the first reply")
    _post(site, before, "Where is order A-1001?")
    wait_until(lambda: "parked" in _session_status(site, before), "the approval wait")

    # The prompt's page: Versions lists version 1 with its note.
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/agent/")
    page.get_by_role("link", name="ver-agent").click()
    # "Try this agent" offers a draft of the side prompt before saving it.
    page.locator("#try-agent").get_by_role("link", name="draft a change to ver-prompt").click()
    expect(page.locator("h1")).to_contain_text("Try a change to ver-prompt")
    box = page.get_by_label("Instructions")
    expect(box).to_have_value(OLD)
    box.fill(DRAFT)
    page.get_by_role("button", name="Try this draft").click()
    page.wait_for_url(re.compile(r".*/draft/\?.*draft=.*"))
    try_panel = page.locator("#draft-try")
    expect(try_panel).to_contain_text("Trying the draft")
    chat = page.frame_locator("#draft-try iframe")
    chat.locator("#composer-input").fill("Hello draft")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator("#transcript")).to_contain_text(
        "Hello from the versioned helper.", timeout=30_000
    )
    shot(page, "studio-prompt-draft")
    src = try_panel.locator("iframe").get_attribute("src") or ""
    draft_thread = src.split("/chat/t/")[1].split("?")[0]
    draft_logs = wait_until(lambda: _llm_logs(site, draft_thread), "the draft's request log")
    assert DRAFT in draft_logs[0]["system_prompt"]
    assert draft_logs[0]["versions"]["prompts/ver-prompt"] == "draft"
    # Nothing was saved by trying: the prompt is still version 1 for everyone else.
    assert _saved_text(site) == OLD

    # Saved with a note: it becomes version 2 and the page shows what changed.
    try_panel.get_by_label("Change note").fill("Say it is version two")
    try_panel.get_by_role("button", name="Save this draft").click()
    expect(page.locator(".messagelist .success")).to_contain_text("saved as version 2")
    assert _saved_text(site) == DRAFT

    # The session that started before the edit finishes on version 1.
    pending = call_api(site, "ops", "GET", f"/api/threads/{before}/pending-tool-calls")["pending"]
    call_api(
        site,
        "ops",
        "POST",
        f"/api/threads/{before}/tool-result",
        {"tool_call_id": pending[0]["tool_call_id"], "approve": True},
    )
    wait_until(
        lambda: _session_status(site, before) == ["completed", "completed"], "the resumed session"
    )
    last = _llm_logs(site, before)[-1]
    assert OLD in last["system_prompt"] and DRAFT not in last["system_prompt"]
    assert last["versions"]["prompts/ver-prompt"] == 1

    # History: two versions, who, how and the notes; version 2 diffed against version 1.
    page.goto(f"{site.url}/admin/agents_app/prompt/")
    page.get_by_role("link", name="ver-prompt").click()
    page.get_by_role("link", name="Versions").click()
    history = page.locator(".studio-versions-table")
    expect(history.locator("tbody tr")).to_have_count(2)
    expect(history.locator("tr[data-number='2']")).to_contain_text("Say it is version two")
    expect(history.locator("tr[data-number='2']")).to_contain_text("draft saved")
    expect(history.locator("tr[data-number='1']")).to_contain_text("First")
    shot(page, "studio-versions-history")
    history.get_by_role("link", name="Version 2").click()
    diff = page.locator("table.studio-diff")
    expect(diff.locator("tr.studio-diff-changed")).to_have_count(1)
    changed = diff.locator("tr.studio-diff-changed")
    expect(changed.locator("del").filter(has_text="one")).to_have_count(1)
    expect(changed.locator("ins").filter(has_text="drafted")).to_have_count(1)
    shot(page, "studio-versions-diff")

    # Restore version 1 (from version 1's page): it comes back as version 3.
    page.get_by_label("Compare with").select_option("current")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator(".studio-diff-summary")).to_contain_text("No differences")
    page.goto(page.url.split("/versions/")[0] + "/versions/1/?against=current")
    expect(page.locator(".studio-diff-summary")).to_contain_text("1 line differs")
    page.get_by_role("button", name="Restore this version").click()
    expect(page.locator(".messagelist .success")).to_contain_text("it is now version 3")
    expect(page.locator("tr[data-number='3']")).to_contain_text("Restored version 1")
    assert _saved_text(site) == OLD
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_history_and_diff_pages_on_a_phone(site: Site, phone_page: Page) -> None:
    """The demo support prompt's pages at phone width: the tables scroll inside the page."""
    admin_login(phone_page, site)
    phone_page.goto(f"{site.url}/admin/agents_app/prompt/")
    phone_page.locator("#result_list tbody a", has_text="support_prompt").click()
    phone_page.get_by_role("link", name="Versions").click()
    expect(phone_page.locator("h1")).to_contain_text("Versions of")
    shot(phone_page, "studio-versions-history-phone")
    phone_page.locator(".studio-versions-table a", has_text="Version 1").first.click()
    expect(phone_page.locator("table.studio-diff")).to_be_visible()
    width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390 + 1, f"the page scrolls sideways ({width}px)"
    shot(phone_page, "studio-versions-diff-phone")
    assert phone_page.console_errors == []  # type: ignore[attr-defined]
