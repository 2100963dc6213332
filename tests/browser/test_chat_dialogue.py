"""A dual_ai thread reads as a dialogue between its two labelled sides."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, chat_login, shot

# First replies wait for the worker to start on a busy machine.
expect.set_options(timeout=15_000)


def test_a_debate_reads_as_a_dialogue_with_each_side_labelled(page: Page, site: Site) -> None:
    chat_login(page, site, "alice", then="/chat/?agent=debate_agent")
    expect(page.get_by_label("Agent")).to_have_value("debate_agent")
    box = page.get_by_label("Message")
    box.fill("Should cities ban cars from their centres?")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")

    pro = page.locator("article.msg-assistant.side-a")
    con = page.locator("article.msg-assistant.side-b")
    expect(page.locator("article.msg-user .author")).to_have_text("You")
    expect(pro.first.locator(".author")).to_have_text("Pro")
    expect(pro.first).to_contain_text("Car-free city centres are safer")
    expect(con.first.locator(".author")).to_have_text("Con")
    expect(con.first).to_contain_text("Safety gains often move")
    expect(page.locator("#state")).to_have_attribute("data-state", "idle", timeout=30_000)
    expect(page.get_by_role("heading", level=1)).to_have_text("Debate (demo)")
    shot(page, "chat-dual-ai")

    # Continue asks the two sides for another round.
    before = page.locator("article.msg[data-status=completed]").count()
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("article.msg[data-status=completed]")).not_to_have_count(before)
    assert page.console_errors == []  # type: ignore[attr-defined]
