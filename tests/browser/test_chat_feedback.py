"""Issue #42: a person rates a reply in the chat (👍 / 👎 with a reason and a comment),
changes the rating, sees it again after a reload, and withdraws it."""

from __future__ import annotations

from playwright.sync_api import APIResponse, Page, Route, expect

from tests.browser.support import Site, call_api, chat_login, shot
from tests.waiting import wait_until

expect.set_options(timeout=15_000)


def _rating(site: Site, thread_id: str) -> list[object]:
    rows = call_api(site, "alice", "GET", f"/api/threads/{thread_id}/messages?limit=200")
    return [m.get("feedback") for m in rows["messages"] if m["role"] == "assistant"]


def test_alice_rates_changes_and_withdraws_a_reply(page: Page, site: Site) -> None:
    site.python(
        "from agents_app.models import Agent; "
        "Agent.objects.filter(name='support_agent')"
        ".update(feedback_reasons=['Wrong order', 'Too slow'])"
    )
    chat_login(page, site, "alice", then="/chat/?agent=support_agent")
    box = page.get_by_label("Message")
    box.fill("Where is my order A-1001?")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    thread_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    reply = page.locator("article.msg-assistant").filter(has_text="Is there anything else")
    expect(reply).not_to_have_attribute("data-streaming", "true")
    up = reply.get_by_role("button", name="Good reply")
    down = reply.get_by_role("button", name="Bad reply")

    up.click()
    expect(up).to_have_attribute("aria-pressed", "true")
    assert _rating(site, thread_id)[-1] == {"score": 1, "reason": None, "comment": None}

    down.click()  # changing to 👎 asks why
    expect(reply.get_by_label("Reason")).to_be_visible()
    reply.get_by_label("Reason").select_option("Wrong order")
    reply.get_by_label("Comment").fill("It named the wrong carrier.")
    shot(page, "chat-feedback-reason-1440")
    reply.get_by_role("button", name="Send feedback").click()
    expect(reply.get_by_label("Reason")).to_have_count(0)
    expected = {"score": -1, "reason": "Wrong order", "comment": "It named the wrong carrier."}
    assert _rating(site, thread_id)[-1] == expected

    page.reload()
    reply = page.locator("article.msg-assistant").filter(has_text="Is there anything else")
    expect(
        reply.get_by_role("button", name="Bad reply (press again to withdraw)")
    ).to_have_attribute("aria-pressed", "true")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "chat-feedback-rated-390")
    reply.get_by_role("button", name="Bad reply (press again to withdraw)").click()
    expect(reply.get_by_role("button", name="Bad reply")).to_have_attribute("aria-pressed", "false")
    assert _rating(site, thread_id)[-1] is None


def _newest_rows(url: str) -> bool:
    return "/messages?limit=200&order=desc" in url


def test_a_rating_stays_when_a_reload_fetched_before_it_lands_after(page: Page, site: Site) -> None:
    """The page reloads the newest rows when a reply settles; a click on 👍 can cross that
    reload, whose copy of the reply does not have the rating yet. The 👍 stays pressed."""
    stale: list[tuple[Route, APIResponse]] = []

    def hold_the_first_copy_with_the_reply(route: Route) -> None:
        answer = route.fetch()
        if not stale and "Is there anything else" in answer.text():
            stale.append((route, answer))  # fetched now, before the rating: answered later
        else:
            route.fulfill(response=answer)

    page.route(_newest_rows, hold_the_first_copy_with_the_reply)
    chat_login(page, site, "alice", then="/chat/?agent=support_agent")
    box = page.get_by_label("Message")
    box.fill("Where is my order A-1001?")
    box.press("Enter")
    reply = page.locator("article.msg-assistant").filter(has_text="Is there anything else")
    expect(reply).not_to_have_attribute("data-streaming", "true")

    def held() -> bool:
        page.wait_for_timeout(50)  # lets Playwright run the route handler meanwhile
        return bool(stale)

    wait_until(held, "the reload after the reply settled")
    up = reply.get_by_role("button", name="Good reply")
    with page.expect_response(lambda r: r.url.endswith("/feedback")) as rated:
        up.click()
    assert rated.value.ok
    expect(up).to_have_attribute("aria-pressed", "true")

    route, answer = stale[0]
    rows = answer.json()
    for row in rows["messages"]:
        if row["role"] == "assistant" and "Is there anything else" in (row["content"] or ""):
            assert row.get("feedback") is None  # the copy really is older than the rating
            row["content"] += " (reloaded)"
    route.fulfill(response=answer, json=rows)
    expect(reply).to_contain_text("(reloaded)")  # the older copy is the one shown now
    expect(up).to_have_attribute("aria-pressed", "true")
    expect(reply.get_by_role("button", name="Good reply (press again to withdraw)")).to_have_count(
        1
    )
