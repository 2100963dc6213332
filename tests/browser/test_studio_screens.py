"""The studio's main screens as a person sees them: dashboard, code catalog, prompt preview."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

SEED = """
from agents_app.models import Agent, EnvValue, Log, ScheduledEffect, Thread
from django.utils import timezone
agent = Agent.objects.get(name="support_agent")
thread = Thread.objects.create(agent=agent, origin_agent=agent, display_name="screens-seed")
Log.objects.create(thread=thread, model="demo", cost_total="0.1234", is_complete=True)
thread.last_activity_at = timezone.now(); thread.save()
ScheduledEffect.objects.create(thread=thread, name="send_reminder", due_at=timezone.now(),
    status="failed", error="The mail server refused the message.")
for key, kind, value in (("COMPANY", "text", "Acme Rockets"), ("VAULT_KEY", "secret", "%s")):
    env = EnvValue(scope="instance", key=key, value_type=kind); env.value = value; env.save()
"""


@pytest.fixture(scope="module")
def seeded(site: Site) -> Iterator[Site]:
    site.python(SEED % f"vault-{uuid.uuid4().hex}")
    yield site
    # The suite shares one site: the seeded thread's spend and failed effect would show up in
    # later pages (the support agent's structure lists the effects its threads scheduled).
    site.python(
        "from agents_app.models import Thread; "
        "Thread.objects.filter(display_name='screens-seed').delete()"
    )


def test_the_dashboard_shows_spend_failures_and_recent_threads(seeded: Site, page: Page) -> None:
    site = seeded
    admin_login(page, site)

    # To the cent, never "$0.1234" (other tests may add spend of their own).
    cents = re.compile(r"^\$\d[\d,]*\.\d\d$")
    expect(page.locator("#spend-today")).to_have_text(cents)
    expect(page.locator("#spend-month")).to_have_text(cents)
    expect(page.locator("#spend-today")).to_contain_text("$0.12")
    expect(page.locator("#recent-threads")).to_contain_text("just now")
    failed = page.locator("#failed-effects")
    expect(failed).to_contain_text("send_reminder")
    expect(failed).to_contain_text("The mail server refused the message.")
    expect(page.locator("#recent-threads")).to_contain_text("Support (demo)")
    shot(page, "studio-dashboard")

    # Each number leads to its details.
    failed.get_by_role("link", name="send_reminder").click()
    expect(page.locator("#content")).to_contain_text("The mail server refused the message.")


def test_the_dashboard_reads_at_phone_width(seeded: Site, phone_page: Page) -> None:
    page = phone_page
    admin_login(page, seeded)
    expect(page.locator("#spend-today")).to_have_text(re.compile(r"^\$\d[\d,]*\.\d\d$"))
    expect(page.locator("#recent-threads time").first).to_have_text(
        re.compile(r"^(just now|\d+ (minute|hour|day)s? ago)$")
    )
    shot(page, "studio-dashboard-phone")


def test_the_catalog_lists_code_tools_with_their_argument_schemas(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.get_by_role("link", name="Code catalog").click()
    tool = page.locator("#tools tr", has_text="lookup_order")
    expect(tool).to_be_visible()
    tool.get_by_text("Argument schema").click()
    expect(tool.locator("pre")).to_contain_text('"properties"')
    for section in ("#hooks", "#effects", "#endpoints"):
        expect(page.locator(section)).to_be_visible()
    shot(page, "studio-catalog")


def test_the_prompt_editor_previews_text_includes_and_env_parts(seeded: Site, page: Page) -> None:
    site = seeded
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/prompt/add/")
    page.locator("#id_name").fill("preview_prompt")
    # One way at a time: the simple instructions box, or (after this button) parts.
    expect(page.locator("#parts-group")).to_be_hidden()
    page.locator("#build-from-parts").click()
    expect(page.locator("#id_text")).to_be_hidden()
    expect(page.locator("#id_parts-0-include")).to_be_hidden()
    add_part = page.get_by_text("Add another part")

    def part(index: int, kind: str) -> None:
        kind_select = page.locator(f"#id_parts-{index}-type")
        if kind_select.count() == 0:
            add_part.click()
        kind_select.select_option(kind)

    part(0, "text")
    page.locator("#id_parts-0-content").fill("You work for ")
    part(1, "env")
    page.locator("#id_parts-1-env_key").fill("COMPANY")
    part(2, "text")
    page.locator("#id_parts-2-content").fill(". Vault: ")
    part(3, "env")
    page.locator("#id_parts-3-env_key").fill("VAULT_KEY")
    part(4, "env")
    page.locator("#id_parts-4-env_key").fill("NOBODY_SET_THIS")
    part(5, "include")
    page.locator("#id_parts-5-include").select_option(index=1)

    preview = page.locator("#prompt-preview-text")
    expect(preview).to_contain_text("You work for Acme Rockets. Vault: [secret VAULT_KEY]")
    expect(preview).to_contain_text("[NOBODY_SET_THIS: not set here]")
    expect(preview).not_to_contain_text("vault-")
    # A part row shows only the field of its kind.
    expect(page.locator("#id_parts-1-content")).to_be_hidden()
    expect(page.locator("#id_parts-1-env_key")).to_be_visible()
    page.get_by_role("tab", name="Tools").click()
    expect(page.locator("#tool-catalog")).to_contain_text("lookup_order")
    page.locator("#tool-search").fill("lookup_order")
    picker = page.locator("#tool-picker-list li[data-name='lookup_order']")
    expect(picker).to_be_visible()
    others = page.locator("#tool-picker-list li[data-name]:not([data-search*='lookup_order'])")
    assert others.count() > 0
    expect(others.first).to_be_hidden()
    picker.get_by_role("button", name="Add").click()
    expect(page.locator("#id_tool_entries-0-name")).to_have_value("lookup_order")
    expect(picker.get_by_role("button")).to_have_text("Added")
    shot(page, "studio-prompt-editor-tools")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-prompt-editor-tools-phone")
    page.set_viewport_size({"width": 1280, "height": 860})
    page.get_by_role("tab", name="Instructions").click()
    shot(page, "studio-prompt-editor")
