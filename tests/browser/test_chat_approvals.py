"""A tool call that needs approval: the chat page shows the tool and its arguments with
Approve / Reject; approving runs the tool and the agent answers (seeded ``approval-agent``)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, chat_login, shot

expect.set_options(timeout=20_000)


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def test_alice_approves_a_tool_call_from_the_chat_page(page: Page, site: Site) -> None:
    chat_login(page, site, "alice", then="/chat/?agent=approval-agent")
    _send(page, "Where is my order A-1001?")
    page.wait_for_url("**/chat/t/**")
    panel = page.locator("section.approval")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("lookup_order")
    expect(panel.locator(".tool-args")).to_contain_text('"order_id": "A-1001"')
    expect(page.locator("#state")).to_have_attribute("data-state", "waiting")
    shot(page, "chat-approval-waiting")

    panel.get_by_role("button", name="Approve").click()
    reply = page.locator("article.msg-assistant").filter(has_text="all done")
    expect(reply).to_be_visible()
    expect(page.locator("section.approval")).to_have_count(0)
    # Once answered, a line per call for a person who is not staff (issue #40 item 10).
    expect(page.locator(".tool-line")).to_have_text("Used lookup order")
    shot(page, "chat-approval-approved")


def test_reject_needs_a_reason_and_the_agent_reads_it(page: Page, site: Site) -> None:
    chat_login(page, site, "alice", then="/chat/?agent=approval-agent")
    _send(page, "Where is my order A-1001?")
    page.wait_for_url("**/chat/t/**")
    panel = page.locator("section.approval")
    expect(panel).to_be_visible()
    panel.get_by_role("button", name="Reject").click()
    expect(panel.locator(".approval-status")).to_contain_text("Give a reason")
    panel.get_by_label("Reason for rejecting lookup_order").fill("not today")
    panel.get_by_role("button", name="Reject").click()
    expect(page.locator("article.msg-assistant").filter(has_text="all done")).to_be_visible()
    expect(page.locator(".tool-line")).to_have_text("lookup order did not work")
    shot(page, "chat-approval-rejected")
