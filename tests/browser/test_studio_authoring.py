"""Done-when (1): a person who writes no code builds a `test` model, a prompt and an agent
in the studio, by clicking and typing only, then chats with the agent and sees the reply
stream in. Also: form errors appear next to the field they are about, in plain words."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

REPLY = "Hi! I am the studio-made helper and I stream."


def _save(page: Page, button: str = "Save and continue editing") -> None:
    page.get_by_role("button", name=button, exact=True).click()


def _open(page: Page, section: str) -> None:
    """Open a collapsed fieldset (Django renders it as <details>) by its title."""
    summary = page.locator("summary", has_text=section).first
    if summary.locator("xpath=..").get_attribute("open") is None:
        summary.click()


def test_a_non_developer_builds_an_agent_and_chats_with_it(site: Site, page: Page) -> None:
    admin_login(page, site)

    # 1. A test model answering from a script (the only JSON typed is the script itself).
    page.get_by_role("link", name="Add to Models").click()  # the dashboard's Set up tiles
    page.locator("#id_name").fill("helper_model")
    page.locator("#id_provider").select_option(label="Test (scripted, no API key)")
    page.locator("#id_model").fill("scripted-helper")
    page.locator("#id_input_price").fill("1.5")
    page.locator("#id_output_price").fill("3")
    # Choosing the Test provider opens its script section by itself.
    expect(page.locator("#id_script")).to_be_visible()
    page.locator("#id_script").fill(f'[{{"content": "{REPLY}"}}]')
    page.locator("#id_streaming_chunk_size").fill("4")
    page.locator("#id_streaming_chunk_delay_ms").fill("30")
    shot(page, "studio-model-editor")
    _save(page)
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")

    # 2. A prompt on that model, chosen from a list; the preview shows the system prompt.
    page.goto(f"{site.url}/admin/")
    page.get_by_role("link", name="Add to Prompts").click()
    page.locator("#id_name").fill("helper_prompt")
    # The editor opens on its Instructions tab; the model is on the Model tab.
    page.locator("#id_text").fill("You help people find their way.")
    expect(page.locator("#prompt-preview-text")).to_have_text("You help people find their way.")
    expect(page.locator("#id_model")).to_be_hidden()
    page.get_by_role("tab", name="Model").click()
    page.locator("#id_model").select_option(label="helper_model")
    _save(page)
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")

    # 3. An agent whose side A runs that prompt, picked from a list.
    page.goto(f"{site.url}/admin/")
    page.get_by_role("link", name="Add to Agents").click()
    page.locator("#id_name").fill("helper_agent")
    page.locator("#id_title").fill("Studio helper")
    page.locator("#id_side_a_prompt").select_option(label="helper_prompt")
    # Side B is only for AI <-> AI agents: hidden until that type is chosen.
    side_b = page.locator("#id_side_b_prompt")
    expect(side_b).to_be_hidden()
    page.locator("#id_type").select_option("dual_ai")
    expect(side_b).to_be_visible()
    page.locator("#id_type").select_option("ai_human")
    expect(side_b).to_be_hidden()
    shot(page, "studio-agent-editor")
    _save(page)
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")

    # 4. "Try this agent": the chat page embedded under the form; the reply streams in.
    panel = page.locator("#try-agent")
    panel.scroll_into_view_if_needed()
    chat = page.frame_locator("#try-agent iframe")
    # The chat's script is ready once it has chosen the agent: a Send before that submits the
    # bare form (a navigation to /chat/?, which then offers the first agent instead).
    expect(chat.locator("#agent-select")).to_have_value("helper_agent")
    chat.locator("#composer-input").fill("Hello, who are you?")
    chat.get_by_role("button", name="Send").click()
    transcript = chat.locator("#transcript")
    expect(transcript).to_contain_text("Hello, who are you?")
    expect(transcript).to_contain_text(REPLY, timeout=30_000)
    shot(page, "studio-try-agent")

    # The conversation is a real thread: the dashboard lists it, the inspector shows it.
    page.goto(f"{site.url}/admin/")
    recent = page.locator("#recent-threads")
    expect(recent).to_contain_text("Studio helper")
    recent.get_by_role("link", name="Studio helper").first.click()
    expect(page.locator("#inspector-messages")).to_contain_text(REPLY)
    expect(page.locator("#inspector-logs")).to_contain_text("helper_model")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_form_errors_appear_next_to_the_field_in_plain_words(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/languagemodel/add/")
    page.locator("#id_name").fill("broken_model")
    page.locator("#id_provider").select_option(label="Test (scripted, no API key)")
    page.locator("#id_model").fill("scripted")
    page.locator("#id_input_price").fill("-2")
    _open(page, "Test provider")
    page.locator("#id_script").fill('[{"content": "fine"}, {"content": 42}, "oops"]')
    _save(page, "Save")

    price_row = page.locator(".form-row.field-input_price")
    expect(price_row.locator(".errorlist")).to_be_visible()
    expect(price_row.locator(".errorlist")).to_contain_text("cannot be negative")
    script_row = page.locator(".form-row.field-script")
    expect(script_row.locator(".errorlist")).to_contain_text("Script item 2")
    expect(script_row.locator(".errorlist")).to_contain_text("Script item 3")
    # What was typed is kept so it can be fixed, and nothing was saved.
    expect(page.locator("#id_script")).to_have_value(re.compile("oops"))
    shot(page, "studio-model-errors")

    # A script that is not JSON at all says where the mistake is.
    page.locator("#id_input_price").fill("1")
    page.locator("#id_script").fill('[{"content": "missing quote}]')
    _save(page, "Save")
    expect(script_row.locator(".errorlist")).to_contain_text("not valid JSON")
    expect(script_row.locator(".errorlist")).to_contain_text("line 1")
    assert "broken_model" not in site.python(
        "from agents_app.models import LanguageModel;"
        "print(list(LanguageModel.objects.values_list('name', flat=True)))"
    )
