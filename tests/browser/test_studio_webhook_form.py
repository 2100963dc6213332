"""Issue #55 item 4 in Chromium: the webhook form is for people (events ticked from sentences,
the secret picked by name, refusals as sentences on their fields), and a new trigger's URL
is shown once with a copy button and a curl request that, run as shown, starts a thread.
Screenshots at 1440 and 390 px, light and dark."""

from __future__ import annotations

import re
import subprocess

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)

SECRET = """
from agents_app.models import EnvValue
if not EnvValue.objects.filter(scope="instance", key="HOOK_SECRET").exists():
    row = EnvValue(scope="instance", key="HOOK_SECRET", value_type="secret")
    row.value = "whsec-browser-0123456789"
    row.save()
"""


def test_a_webhook_is_made_from_sentences(site: Site, page: Page) -> None:
    site.python(SECRET)
    admin_login(page, site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/webhooksubscription/add/")
    expect(page.locator("textarea")).to_have_count(0)  # no JSON box for the events
    page.locator("#id_url").fill("http://10.1.2.3/hooks")
    page.locator("#id_secret_env").fill("NO_SUCH_SECRET")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".field-url .errorlist")).to_contain_text(
        "Webhooks are not sent to this address: 10.1.2.3"
    )
    expect(page.locator(".field-url .errorlist")).to_contain_text("STUDIO_EGRESS_ALLOW setting")
    expect(page.locator(".field-secret_env .errorlist")).to_contain_text(
        "There is no secret named NO_SUCH_SECRET: add it under Env values first"
    )
    expect(page.locator(".field-events .errorlist")).to_have_text(
        "Tick at least one event to send."
    )
    assert "secretEnv:" not in page.content() and "url: " not in page.content()
    shot(page, "studio-webhook-errors-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-webhook-errors-390")
    page.set_viewport_size({"width": 1440, "height": 900})

    page.locator("#id_url").fill("hooks.example.com/agents")
    page.locator("#id_secret_env").fill("HOOK_SECRET")
    page.get_by_role("checkbox", name=re.compile("^A conversation failed")).check()
    page.get_by_role("checkbox", name=re.compile("^A tool call waits")).check()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            shot(page, f"studio-webhook-form-{scheme}-{width}")
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.get_by_role("button", name="Save", exact=True).click()
    row = page.locator("#result_list tr", has_text="hooks.example.com")
    expect(row).to_contain_text("A conversation failed, A tool call waits for a decision")
    assert not page.console_errors  # type: ignore[attr-defined]


def test_a_new_trigger_shows_its_url_once_with_a_request_that_works(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/trigger/add/")
    page.locator("#id_agent").select_option(label="support_agent")
    page.locator("#id_name").fill("orders from the shop")
    page.locator("#id_template").fill("Order {{ order.id }} from {{ customer }} needs an answer.")
    page.get_by_role("button", name="Save", exact=True).click()
    url = page.locator("#trigger-url")
    expect(url).to_contain_text("/api/inbound/trg_")
    page.get_by_role("button", name="Copy the URL").click()
    expect(page.locator(".studio-copy-row .studio-copied").first).to_have_text("Copied.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == url.inner_text()
    curl = page.locator("#trigger-curl").inner_text()
    assert curl.startswith("curl -X POST") and '"customer": "example customer"' in curl
    shot(page, "studio-trigger-created-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-trigger-created-390")

    # The request as shown, run in a shell, starts a thread.
    done = subprocess.run(
        ["bash", "-c", curl + " -s -w ' %{http_code}'"], capture_output=True, text=True, timeout=30
    )
    assert done.stdout.endswith(" 202"), (done.stdout, done.stderr)
    assert "threadId" in done.stdout
    # Shown once: the trigger's own page has only the start of the token.
    token = url.inner_text().rsplit("/", 1)[1]
    page.goto(f"{site.url}/admin/agents_app/trigger/")
    assert token not in page.content()
