"""Issue #40 item 11 (the chat's part): the chat follows the system's dark mode, and its pages
name an icon that loads (no favicon 404). Screenshots at 1440 and 390 px, light and dark."""

from __future__ import annotations

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.browser.support import Site, chat_login, shot

expect.set_options(timeout=20_000)

ANSWER = "Is there anything else I can do"


def _luminance(css: str) -> float:
    """Relative luminance of an ``rgb(…)``/``rgba(…)`` computed colour (0 black, 1 white)."""
    parts = [float(p) for p in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]

    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(p) for p in parts)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _style(page: Page, selector: str, prop: str) -> str:
    # Found and read in one script turn: the transcript re-renders after a reply settles, and a
    # node resolved by a locator first can be detached by the time it is read (its computed
    # style is then empty).
    page.locator(selector).first.wait_for(state="attached")
    return str(
        page.evaluate(
            "([s, p]) => getComputedStyle(document.querySelector(s))[p]", [selector, prop]
        )
    )


def _conversation(browser: Browser, site: Site, scheme: str, width: int) -> tuple[Page, list]:
    context = browser.new_context(
        color_scheme=scheme,  # type: ignore[arg-type]
        viewport={"width": width, "height": 900 if width > 600 else 844},
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    chat_login(page, site, "alice", then="/chat/?agent=support_agent")
    box = page.get_by_label("Message")
    box.fill("Where is my order A-1001?")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator("article.msg-assistant").filter(has_text=ANSWER)).to_be_visible()
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")
    return page, missing


def test_the_chat_is_dark_when_the_system_is(browser: Browser, site: Site) -> None:
    for width, name in ((1440, "desktop"), (390, "phone")):
        page, missing = _conversation(browser, site, "dark", width)
        body_bg = _style(page, "html", "backgroundColor")
        assert _luminance(body_bg) < 0.05, body_bg
        reply = "article.msg-assistant .msg-body"
        text, panel = (
            _style(page, reply, "color"),
            _style(page, "article.msg-assistant", "backgroundColor"),
        )
        assert _contrast(text, panel) >= 4.5, (text, panel)
        assert _luminance(panel) < 0.05, panel
        muted = _style(page, ".tool-line", "color")
        assert _contrast(muted, panel) >= 4.5, (muted, panel)
        box_bg = _style(page, "#composer-input", "backgroundColor")
        assert _luminance(box_bg) < 0.05, box_bg
        shot(page, f"chat-dark-{name}")
        if width == 390:
            page.get_by_role("button", name="Chats").click()
            shot(page, "chat-dark-phone-list")
        assert missing == [], missing
        page.context.close()


def test_the_chat_stays_light_when_the_system_is_and_names_an_icon(
    browser: Browser, site: Site
) -> None:
    for width, name in ((1440, "desktop"), (390, "phone")):
        page, missing = _conversation(browser, site, "light", width)
        assert _luminance(_style(page, "html", "backgroundColor")) > 0.8
        shot(page, f"chat-light-{name}")
        icon = page.locator("link[rel=icon]")
        expect(icon).to_have_count(1)
        href = icon.get_attribute("href")
        assert href
        answer = httpx.get(f"{site.url}{href}", timeout=10)
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("image/svg+xml")
        assert missing == [], missing
        page.context.close()
    # The sign-in page, signed out, in dark mode too.
    context = browser.new_context(color_scheme="dark", viewport={"width": 390, "height": 844})
    login = context.new_page()
    login.goto(f"{site.url}/login/")
    expect(login.locator("link[rel=icon]")).to_have_count(1)
    assert _luminance(_style(login, "html", "backgroundColor")) < 0.05
    shot(login, "chat-login-dark-phone")
    context.close()
