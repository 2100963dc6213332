"""Issue #40 item 4: a saved agent's edit page lays out as a page: the "Env values this agent
needs" heading is a heading (not a band ~1,800 px tall behind the form), the sections after
the form start below it, and "Advanced" and "Save" are apart; at 1440 and 390 px, light and
dark."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.support import Site, admin_login, shot


def _box(page: Page, selector: str) -> dict[str, Any]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_agent_edit_page_sections_do_not_overlap(site: Site, page: Page, scheme: str) -> None:
    admin_login(page, site)
    page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{site.url}/admin/agents_app/agent/")
        page.get_by_role("link", name="support_agent", exact=True).click()
        page.wait_for_load_state("networkidle")
        heading = _box(page, "#env-needs-title")
        assert heading["height"] < 90, f"the env heading is {heading['height']} px tall"
        save = _box(page, ".submit-row")
        advanced = _box(page, "fieldset:has-text('Advanced'), details:has-text('Advanced')")
        assert advanced["y"] + advanced["height"] <= save["y"] + 1, "Advanced runs into Save"
        form = _box(page, "#content-main form")
        assert heading["y"] >= form["y"] + form["height"] - 1, "the env section is behind the form"
        assert _box(page, "#try-agent")["y"] >= heading["y"] + heading["height"]
        overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
        assert overflow <= 1, f"the page scrolls sideways by {overflow} px at {width} px"
        shot(page, f"studio-agent-edit-{width}-{scheme}")
