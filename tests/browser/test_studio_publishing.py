"""Issue #40 item 7: an agent is a draft (staff only) until published, and a published agent
can be offered to chosen groups only. Set in the studio's agent form; seen in the chat's
agent picker, ``GET /api/agents`` and ``POST /api/threads`` of people who are not staff."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, chat_login, shot

expect.set_options(timeout=20_000)

SETUP = """
from django.contrib.auth.models import Group, User
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
save_definitions([
    ("model", ModelDefinition(name="preview-model", provider="test", model="scripted",
        script=[{"content": "Hello from the preview."}])),
    ("prompt", PromptDefinition(name="preview-prompt", model="preview-model",
        prompt="Answer briefly.", include_chat=True)),
    ("agent", AgentDefinition(name="preview-agent", title="Preview helper",
        side_a=SideConfig(prompt="preview-prompt"))),
], strict_code_names=False)
beta, _ = Group.objects.get_or_create(name="Beta testers")
beta.user_set.add(User.objects.get(username="bob"))
"""


def _agents(site: Site, user: str) -> list[str]:
    response = httpx.get(
        f"{site.url}/api/agents",
        headers={"Authorization": f"Bearer {site.api_key(user)}"},
        timeout=15,
    )
    response.raise_for_status()
    return [a["name"] for a in response.json()["agents"]]


def _start(site: Site, user: str) -> int:
    response = httpx.post(
        f"{site.url}/api/threads",
        json={"agent_id": "preview-agent"},
        headers={"Authorization": f"Bearer {site.api_key(user)}"},
        timeout=15,
    )
    return response.status_code


def _picker(page: Page, site: Site, user: str) -> list[str]:
    chat_login(page, site, user)
    select = page.locator("#agent-select")
    expect(select.locator("option").first).to_be_attached()
    names = select.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
    page.context.clear_cookies()
    return list(names)


def _save_publishing(page: Page, site: Site, state: str, groups: list[str]) -> None:
    page.goto(f"{site.url}/admin/agents_app/agent/")
    page.get_by_role("link", name="preview-agent", exact=True).click()
    page.get_by_label("State").select_option(state)
    for box in page.locator("#id_audience_groups input[type=checkbox]").all():
        label = box.evaluate("(b) => b.closest('label').textContent.trim()")
        box.set_checked(label in groups)
    page.locator("input[name=_continue]").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")


def test_draft_and_audience_decide_who_is_offered_an_agent(site: Site, page: Page, browser) -> None:
    site.python(SETUP)
    # Published for everyone (the default, as for every existing agent): all see it.
    assert "preview-agent" in _agents(site, "alice")

    staff = browser.new_page(viewport={"width": 1440, "height": 900})
    admin_login(staff, site)
    _save_publishing(staff, site, "draft", [])
    publishing = staff.locator("fieldset", has_text="Publishing")
    expect(publishing).to_contain_text("A draft is for staff only")
    shot(staff, "studio-publishing-draft-1440")

    # A draft: absent for people (picker, list, thread creation), there for staff.
    assert "preview-agent" not in _picker(page, site, "alice")
    assert "preview-agent" not in _agents(site, "alice")
    assert _start(site, "alice") == 404
    assert "preview-agent" in _agents(site, "ops")

    # Published to the Beta testers group: bob (a member) is offered it, alice is not.
    _save_publishing(staff, site, "published", ["Beta testers"])
    assert "preview-agent" in _picker(page, site, "bob")
    assert _start(site, "bob") == 200
    assert "preview-agent" not in _picker(page, site, "alice")
    assert _start(site, "alice") == 404

    # The list says which agents are drafts; the form reads at 390 px and in dark mode.
    staff.goto(f"{site.url}/admin/agents_app/agent/")
    expect(staff.locator("tr", has_text="preview-agent")).to_contain_text("Published")
    staff.get_by_role("link", name="preview-agent", exact=True).click()
    staff.emulate_media(color_scheme="dark")
    shot(staff, "studio-publishing-audience-1440-dark")
    staff.set_viewport_size({"width": 390, "height": 844})
    shot(staff, "studio-publishing-audience-390-dark")
    staff.emulate_media(color_scheme="light")
    shot(staff, "studio-publishing-audience-390")
    staff.close()
