"""Issue #55 item 9 in Chromium, at 1440 and 390 px, light and dark:

- a new agent's form starts at Draft (staff try it before the chat offers it);
- a Test model's form shows no "Test connection" and no provider model list (it has no vendor
  to ask and needs no model id); an OpenAI model's form still shows both;
- the mid-run choices read as what the person chatting sees, never "answer 409".
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)


LOOKS = [(scheme, width) for scheme in ("light", "dark") for width in (1440, 390)]


def test_a_new_agent_starts_as_a_draft(site: Site, page: Page) -> None:
    admin_login(page, site)
    for scheme, width in LOOKS:
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/admin/agents_app/agent/add/")
        state = page.locator("#id_state")
        expect(state).to_have_value("draft")
        expect(state.locator("option:checked")).to_have_text("Draft (staff only)")
        choices = page.locator("#id_mid_run_messages option").all_inner_texts()
        assert not any("409" in c or "Reject" in c for c in choices), choices
        assert "Refuse: the person is asked to send it again after the reply" in choices
        state.scroll_into_view_if_needed()
        shot(page, f"studio-agent-new-is-draft-{width}-{scheme}")


def test_a_test_model_asks_for_no_connection_test(site: Site, page: Page) -> None:
    admin_login(page, site)
    for scheme, width in LOOKS:
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/admin/agents_app/languagemodel/add/")
        provider = page.locator("#id_provider")
        provider.select_option("openai")
        expect(page.get_by_role("button", name="Test connection")).to_be_visible()
        expect(page.locator("#id_model_helptext")).to_contain_text("gpt-4o-mini")
        expect(page.get_by_role("button", name="Choose from the provider's models")).to_be_visible()
        provider.select_option("test")
        expect(page.get_by_role("button", name="Test connection")).to_be_hidden()
        expect(page.get_by_role("button", name="Choose from the provider's models")).to_be_hidden()
        expect(page.locator(".studio-connection-result")).to_be_hidden()
        expect(page.locator("#id_model_helptext")).to_contain_text("Optional for a Test model")
        expect(page.locator("#id_model_helptext")).not_to_contain_text("gpt-4o-mini")
        shot(page, f"studio-model-test-no-connection-{width}-{scheme}")
    # A saved Test model's own page reads the same.
    page.locator("#id_name").fill("new-things-test-model")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    expect(page.get_by_role("button", name="Test connection")).to_be_hidden()
