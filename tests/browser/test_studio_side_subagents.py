"""Issue #54: a person adds a spec 0.2.0 subagent to an agent's side by form (no JSON), saves,
and sees it on the agent's Structure page; at 1440 and 390 px the rows fit the page."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

DEFINE = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition
boss = AgentDefinition.model_validate({"name": "side_boss", "title": "Side boss",
    "sideA": {"prompt": "support_prompt"}, "sideB": {"human": True}})
save_definitions([("agent", boss)], strict_code_names=False)
"""


def test_a_subagent_added_by_form_shows_on_the_structure_page(site: Site, page: Page) -> None:
    site.python(DEFINE)
    admin_login(page, site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/agent/")
    page.get_by_role("link", name="side_boss", exact=True).click()
    section = page.locator("#side-a-subagents")
    expect(section.get_by_role("heading", name="Subagents of side A")).to_be_visible()
    expect(section.locator(".studio-subagents-needs")).to_be_hidden()
    # The page starts with one empty row; "Add another subagent" adds a second.
    section.get_by_role("button", name="Add another subagent").click()
    expect(section.locator(".studio-subagent-row")).to_have_count(2)
    first = section.locator(".studio-subagent-row").nth(0)
    first.get_by_label("Agent", exact=True).select_option("intent_classifier")
    first.get_by_label("Name (as)").fill("classifier")
    first.get_by_label("Description").fill("<script>alert(1)</script> sorts messages")
    first.get_by_label("Max instances").fill("2")
    first.get_by_label("Blocking").check()
    first.get_by_label("Scoped env").fill("REGION, LANG")
    first.get_by_label("Parent communication").select_option("explicit")
    shot(page, "studio-side-subagents-filled-1440")

    page.get_by_role("button", name="Save and continue editing").click()

    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    saved = page.locator("#side-a-subagents .studio-subagent-row").nth(0)
    expect(saved.get_by_label("Description")).to_have_value(
        "<script>alert(1)</script> sorts messages"
    )
    expect(saved.get_by_label("Blocking")).to_be_checked()
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.locator("#side-a-subagents").scroll_into_view_if_needed()
        overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
        assert overflow <= 1, f"the page scrolls sideways by {overflow} px at {width} px"
        shot(page, f"studio-side-subagents-saved-{width}")
    # The 0.1.0 demo agent: the rows are there, disabled, with the sentence.
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/agent/")
    page.get_by_role("link", name="support_agent", exact=True).click()
    old = page.locator("#side-a-subagents")
    expect(old.locator(".studio-subagents-needs")).to_contain_text("need spec 0.2.0")
    expect(old.get_by_label("Agent", exact=True)).to_be_disabled()

    page.goto(f"{site.url}/admin/agents_app/agent/")
    page.get_by_role("link", name="side_boss", exact=True).click()
    page.locator("#structure-link").click()
    page.wait_for_url(re.compile(r".*/structure/$"))
    body = page.locator("#content")
    expect(body).to_contain_text("Subagent (side A)")
    expect(body).to_contain_text("as classifier: <script>alert(1)</script> sorts messages")
    shot(page, "studio-side-subagents-structure-1440")
