"""Studio, Connect: from an agent's page, the Connect page lists each door's URLs and
snippets, and a Copy button copies one (or selects it for the person to copy)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

pytestmark = pytest.mark.timeout(240)


def test_connect_lists_the_doors_and_copies_a_snippet(site: Site, page: Page) -> None:
    site.python(
        "from agents_app.services.definitions.saves import save_definitions\n"
        "from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, "
        "SideConfig\n"
        "m = ModelDefinition(name='connect_model', provider='test', model='scripted')\n"
        "p = PromptDefinition(name='connect_prompt', model='connect_model', prompt='Hi.')\n"
        "a = AgentDefinition(name='connect_demo', title='Connect demo', "
        "side_a=SideConfig(prompt='connect_prompt'))\n"
        "save_definitions([('m', m), ('p', p), ('a', a)], strict_code_names=False)\n"
    )
    pk = site.python(
        "from agents_app.models import Agent; print(Agent.objects.get(name='connect_demo').pk)"
    )
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/agent/{pk.strip().splitlines()[-1]}/change/")
    page.locator("#connect-link").click()
    expect(page.locator("h1")).to_contain_text("Connect to Connect demo")
    for slug in ("thread-api", "openai", "a2a", "ag-ui", "mcp"):
        expect(page.locator(f"#connect-{slug}-snippet")).to_be_visible()
    expect(page.locator("#connect-a2a")).to_contain_text(
        f"{site.url}/a2a/connect_demo/.well-known/agent-card.json"
    )
    snippet = page.locator("#connect-openai-snippet")
    expect(snippet).to_contain_text('model="connect_demo"')
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url)
    page.get_by_role("button", name="Copy the python snippet").click()
    status = page.locator("#connect-openai .studio-copied").last
    expect(status).to_have_text("Copied.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == snippet.inner_text().strip()
    assert "agtbldr_" not in page.content()
    shot(page, "studio-agent-connect")
    assert page.console_errors == []  # type: ignore[attr-defined]
