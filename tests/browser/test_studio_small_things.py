"""Issue #40 item 11, the studio's parts: a favicon on every page (no 404), breadcrumbs that
do not say "Agents › Agents", no "(TENVS)", empty lists that say what to do (and API keys
have an Add, showing the new key once), and a readable current sidebar item in dark mode."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)
MODELS = {
    "mcpserver": "McpServer",
    "spendbudget": "SpendBudget",
    "scheduledeffect": "ScheduledEffect",
}


def test_studio_small_things(site: Site, page: Page) -> None:
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/agent/")
    expect(page.locator(".breadcrumbs")).to_have_text("Home › Studio › Agents")
    page.get_by_role("link", name="support_agent", exact=True).click()
    expect(page.locator("#content")).not_to_contain_text("TENVS", ignore_case=True)
    assert page.request.get(f"{site.url}/favicon.ico").ok
    assert not missing, f"404s: {missing}"

    # Empty lists explain themselves and offer the next step (other tests of the session
    # may have filled some: those must show their rows, not the guidance).
    for model, words in (
        ("mcpserver", "An MCP server offers tools"),
        ("spendbudget", "nothing caps what the models cost"),
        ("scheduledeffect", "Effects are work a tool or hook asks to run later"),
    ):
        rows = site.python(
            f"from agents_app import models; print(models.{MODELS[model]}.objects.count())"
        )
        page.goto(f"{site.url}/admin/agents_app/{model}/")
        if rows.strip().splitlines()[-1] == "0":
            expect(page.locator("#empty-help")).to_contain_text(words)
            shot(page, f"studio-empty-{model}-1440")
        else:
            expect(page.locator("#empty-help")).to_have_count(0)

    # API keys: Add, the key shown once, and it works.
    page.goto(f"{site.url}/admin/agents_app/apikey/add/")
    page.get_by_label("Name").fill("nightly report")
    page.get_by_label("User").select_option(label="admin")
    page.get_by_role("button", name="Create the key").click()
    expect(page.locator("#new-key")).to_contain_text("shown only this once")
    raw = page.locator("#raw-key").inner_text()
    ok = httpx.get(f"{site.url}/api/agents", headers={"Authorization": f"Bearer {raw}"})
    assert ok.status_code == 200
    page.goto(f"{site.url}/admin/agents_app/apikey/")
    expect(page.locator("#result_list")).to_contain_text("nightly report")
    assert raw not in page.content()

    # Dark mode: the current sidebar item's text stands out from its background.
    page.emulate_media(color_scheme="dark")
    page.goto(f"{site.url}/admin/agents_app/agent/")
    current = page.locator("#nav-sidebar .current-model").first
    colours = current.evaluate(
        """(row) => [getComputedStyle(row).backgroundColor,
                     getComputedStyle(row.querySelector('a')).color]"""
    )

    def luminance(rgb: str) -> float:
        r, g, b = (int(x) / 255 for x in rgb[rgb.index("(") + 1 : -1].split(",")[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    assert abs(luminance(colours[0]) - luminance(colours[1])) > 0.35, colours
    shot(page, "studio-agents-list-1440-dark")
