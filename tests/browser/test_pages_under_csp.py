"""The chat page and the studio work under their Content-Security-Policy: every page
carries the policy, and nothing on them (scripts, styles, the "Try this agent" frame,
an answer streamed in) is refused by it."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, chat_login, shot

expect.set_options(timeout=15_000)

# Every refusal raises a securitypolicyviolation event in the page; collect them from the
# first script on (an init script runs before the page's own and is not subject to its CSP).
COLLECT = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


def _violations(page: Page) -> Any:
    found = list(page.evaluate("window.__cspViolations || []"))
    for frame in page.frames[1:]:
        found += frame.evaluate("window.__cspViolations || []")
    return found


def _policy(page: Page, site: Site, path: str) -> str:
    response = page.goto(f"{site.url}{path}")
    assert response is not None and response.ok, path
    return response.headers.get("content-security-policy", "")


def test_the_chat_page_runs_a_conversation_with_nothing_refused(page: Page, site: Site) -> None:
    page.context.add_init_script(COLLECT)
    chat_login(page, site, "alice", then="/chat/?agent=support_agent")
    policy = _policy(page, site, "/chat/?agent=support_agent")
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    box = page.get_by_label("Message")
    box.fill("Hello there")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator("article.msg-assistant").first).to_be_visible()
    expect(page.locator("#state")).to_have_attribute("data-state", "idle", timeout=30_000)
    shot(page, "chat-under-csp")
    assert _violations(page) == []
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_studio_screens_and_the_try_frame_work_with_nothing_refused(
    page: Page, site: Site
) -> None:
    page.context.add_init_script(COLLECT)
    admin_login(page, site)
    for path in (
        "/admin/",
        "/admin/agents_app/agent/",
        "/admin/agents_app/prompt/",
        "/admin/agents_app/thread/",
        "/admin/agents_app/languagemodel/add/",
    ):
        assert "default-src 'self'" in _policy(page, site, path), path
        assert _violations(page) == [], path
    # An agent's page frames the chat ("Try this agent"): the frame loads and runs.
    page.goto(f"{site.url}/admin/agents_app/agent/")
    page.locator("#result_list tbody th a").first.click()
    # The frame loads lazily, when scrolled to (below the form's sections); Playwright's
    # visibility check does not scroll, and an unloaded frame was waited for past any timeout.
    page.locator("iframe.studio-try-frame").scroll_into_view_if_needed()
    frame = page.frame_locator("iframe.studio-try-frame")
    expect(frame.get_by_label("Message")).to_be_visible()
    # A prompt's editor runs its preview script.
    page.goto(f"{site.url}/admin/agents_app/prompt/")
    page.locator("#result_list tbody th a").first.click()
    page.wait_for_load_state("networkidle")
    shot(page, "studio-under-csp")
    assert _violations(page) == []
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_an_injected_inline_script_does_not_run_on_our_pages(page: Page, site: Site) -> None:
    # The policy forbids inline script: a page that gained a <script> or an onerror=
    # (through any injection) would not run it. Prove it on a real page of ours.
    page.context.add_init_script(COLLECT)
    chat_login(page, site, "alice")
    page.evaluate(
        """() => {
        const s = document.createElement('script');
        s.textContent = 'window.__ran = true';
        document.body.appendChild(s);
        const img = document.createElement('img');
        img.setAttribute('onerror', 'window.__ran = true');
        img.src = '/nonexistent.png';
        document.body.appendChild(img);
    }"""
    )
    page.wait_for_function("window.__cspViolations.length >= 2")
    assert page.evaluate("window.__ran === undefined")
    assert httpx.get(f"{site.url}/login/").headers["content-security-policy"]
