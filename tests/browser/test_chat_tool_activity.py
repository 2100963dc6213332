"""Issue #40 item 10: what people see of an agent's tool calls is the agent's setting
(hidden / summary / full; unset: a line per call for people who are not staff, everything for
staff), set on the studio's agent form and kept in the definition; and "Your chats" holds only
the person's own threads, staff included."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.browser.support import ADMIN_PASSWORD, Site, admin_login, call_api, chat_login, shot

expect.set_options(timeout=20_000)

QUIET = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, SideConfig
agent = AgentDefinition(name="quiet_support", title="Quiet support", tool_activity="hidden",
                        side_a=SideConfig(prompt="support_prompt", max_steps=10))
save_definitions([("agent", agent)], strict_code_names=False)
"""
DEFINITION = """
import json
from agents_app.models import Agent
from agents_app.services.definitions.rows import agent_definition
print(json.dumps(agent_definition(Agent.objects.get(name="quiet_support")).dump()))
"""
ANSWER = "Is there anything else I can do"
# Every text the state line showed, recorded by the page as it changes.
RECORD_STATE = """
window.__states = [];
new MutationObserver(() => {
  const node = document.getElementById('state');
  if (node) window.__states.push(node.textContent);
}).observe(document, { childList: true, subtree: true, characterData: true });
"""


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def test_people_see_a_line_per_tool_call_by_default_and_staff_see_it_all(
    page: Page, site: Site
) -> None:
    chat_login(page, site, "alice", then="/chat/?agent=support_agent")
    _send(page, "Where is my order A-1001?")
    page.wait_for_url("**/chat/t/**")
    alice_thread = page.url.rsplit("/t/", 1)[1].split("?")[0]
    expect(page.locator("article.msg-assistant").filter(has_text=ANSWER)).to_be_visible()
    line = page.locator(".tool-line")
    expect(line).to_have_text("Used lookup order")
    expect(page.locator("details.tool")).to_have_count(0)
    expect(page.locator("#transcript")).not_to_contain_text("order_id")
    expect(page.locator("#transcript")).not_to_contain_text("⚙")
    page.set_viewport_size({"width": 1440, "height": 900})
    shot(page, "chat-tool-activity-summary")

    # Staff see each call's arguments and result, and only their own chats.
    staff = page.context.browser.new_context().new_page()  # type: ignore[union-attr]
    chat_login(staff, site, "admin", password=ADMIN_PASSWORD, then="/chat/?agent=support_agent")
    _send(staff, "Where is my order A-1001?")
    staff.wait_for_url("**/chat/t/**")
    tool = staff.locator("details.tool").filter(has_text="lookup_order")
    expect(tool).to_be_visible()
    tool.locator("summary").click()
    expect(tool.locator(".tool-result")).to_contain_text("PP-55821")
    staff_thread = staff.url.rsplit("/t/", 1)[1].split("?")[0]
    listed = staff.locator("#thread-list a")
    expect(listed.first).to_be_visible()
    hrefs = listed.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert any(staff_thread in h for h in hrefs), hrefs
    assert not any(alice_thread in h for h in hrefs), "alice's chat is under the admin's chats"
    staff.context.close()


def test_an_agent_that_hides_tools_shows_only_answers_and_the_form_keeps_the_setting(
    page: Page, site: Site
) -> None:
    site.python(QUIET)
    dumped = json.loads(site.python(DEFINITION).strip().splitlines()[-1])
    assert dumped["toolActivity"] == "hidden"
    agents = call_api(site, "alice", "GET", "/api/agents")["agents"]
    assert next(a for a in agents if a["name"] == "quiet_support")["tool_activity"] == "hidden"

    page.add_init_script(RECORD_STATE)
    chat_login(page, site, "alice", then="/chat/?agent=quiet_support")
    _send(page, "Where is my order A-1001?")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator("article.msg-assistant").filter(has_text=ANSWER)).to_be_visible()
    expect(page.locator(".tool-line")).to_have_count(0)
    expect(page.locator("details.tool")).to_have_count(0)
    # Nor does the state line name the tool while it runs.
    states = page.evaluate("window.__states")
    assert states and not any("lookup" in s for s in states), states
    # The step that called the tool shows its words only.
    expect(page.locator("article.msg-assistant")).to_have_count(2)
    expect(page.locator("article.msg-assistant").first).to_contain_text("Let me look up")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "chat-tool-activity-hidden-phone")

    # The studio's agent form shows the setting and saves a change of it.
    staff = page.context.browser.new_context().new_page()  # type: ignore[union-attr]
    admin_login(staff, site)
    staff.goto(f"{site.url}/admin/agents_app/agent/?q=quiet_support")
    staff.get_by_role("link", name="quiet_support").first.click()
    select = staff.get_by_label("Tool activity in the chat")
    expect(select).to_have_value("hidden")
    select.select_option("full")
    staff.locator("input[name=_continue], button[name=_continue]").first.click()
    expect(staff.locator(".messagelist, .errornote").first).to_be_visible()
    expect(staff.get_by_label("Tool activity in the chat")).to_have_value("full")
    staff.context.close()
    dumped = json.loads(site.python(DEFINITION).strip().splitlines()[-1])
    assert dumped["toolActivity"] == "full"

    page.reload()
    tool = page.locator("details.tool").filter(has_text="lookup_order")
    expect(tool).to_be_visible()
