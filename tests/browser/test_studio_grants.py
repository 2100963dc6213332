"""Issue #54 F6 in the studio: an operator adds a credential grant by form (kind as a choice,
origins one per line, who may use it ticked from the registry's tools), changes who may use
it without retyping the secret, and never sees the secret again; the pages lay out at 1440
and 390 px, light and dark."""

from __future__ import annotations

import uuid

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

ADD = "/admin/agents_app/credentialgrant/add/"
LIST = "/admin/agents_app/credentialgrant/"


def _no_sideways_scroll(page: Page, width: int) -> None:
    overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
    assert overflow <= 1, f"the page scrolls sideways by {overflow} px at {width} px"


def test_an_operator_adds_and_changes_a_grant_and_never_sees_its_secret(
    site: Site, page: Page
) -> None:
    secret = f"sk-browser-grant-{uuid.uuid4().hex}"
    name = f"crm-{uuid.uuid4().hex[:6]}"
    admin_login(page, site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(site.url + ADD)
    page.locator("#id_name").fill(name)
    page.get_by_label("Header: sent in the header named below", exact=False).check()
    page.locator("#id_secret").fill(secret)
    page.locator("#id_origins").fill("https://api.crm.example\nhttps://backup.crm.example")
    page.locator("#id_inject_header").fill("X-Api-Key")
    # The demo's code tools are offered by name, with "any" first.
    expect(page.locator("#id_allow_tools")).to_contain_text("Any tool (*)")
    page.locator("#id_allow_tools input[value='lookup_order']").check()
    shot(page, "studio-grant-add-1440-light")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    assert secret not in page.content()
    expect(page.locator("#id_secret")).to_have_value("")
    expect(page.locator("#id_allow_tools input[value='lookup_order']")).to_be_checked()
    expect(page.locator("body")).to_contain_text("by admin on")

    # Changing where it goes without the secret is refused, under the secret, in words.
    page.locator("#id_origins").fill("https://elsewhere.example")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".errorlist")).to_contain_text("needs its secret again")
    shot(page, "studio-grant-refused-1440-light")
    # Who may use it changes without the secret.
    page.locator("#id_origins").fill("https://api.crm.example\nhttps://backup.crm.example")
    page.locator("#id_allow_tools input[value='classify']").check()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    row = page.locator("#result_list tr", has_text=name)
    expect(row).to_contain_text("tools: classify, lookup_order")
    expect(row).to_contain_text("https://backup.crm.example")
    expect(row).to_contain_text("instance")
    assert secret not in page.content()

    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width, height in ((1440, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.goto(site.url + LIST)
            expect(page.locator("#result_list")).to_contain_text(name)
            shot(page, f"studio-grants-list-{width}-{scheme}")
            page.get_by_role("link", name=name, exact=True).click()
            expect(page.locator("#id_secret")).to_be_visible()
            _no_sideways_scroll(page, width)
            shot(page, f"studio-grant-change-{width}-{scheme}")
            assert secret not in page.content()
