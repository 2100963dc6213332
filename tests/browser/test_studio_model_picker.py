"""Studio, model editor: someone who is not a developer adds a model by picking it from the
provider's own list (no typing of ids or prices), saves it, and tests the connection.

The provider is OpenRouter, its base URL pointed at a local replay server in this test
process that answers with the real recorded ``GET /api/v1/models``; the key is the
admin's own env value (a planted secret), resolved by the server. Test connection then
gets a 401 from the "vendor" and must show it in plain words. The key must never appear
in the page, the picker's answers or the error.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Response, expect

from tests.browser.support import Site, admin_login, shot
from tests.runtime.providers.recordings import cassette
from tests.runtime.providers.replay import ReplayServer, Reply

PLANTED = "sk-or-PLANTED-browser-7d2e9a41c0"
MODEL_NAME = "picked_sonnet"


@pytest.fixture
def vendor() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def admin_key(site: Site) -> Iterator[None]:
    """The admin's own OPENROUTER_API_KEY (user scope); removed afterwards with the model."""
    site.python(
        "from django.contrib.auth import get_user_model\n"
        "from agents_app.models import EnvValue\n"
        "admin = get_user_model().objects.get(username='admin')\n"
        "row = EnvValue(scope='user', user=admin, key='OPENROUTER_API_KEY', value_type='secret')\n"
        f"row.value = {PLANTED!r}\n"
        "row.save()\n"
    )
    try:
        yield
    finally:
        site.python(
            "from agents_app.models import EnvValue, LanguageModel\n"
            "EnvValue.objects.filter(scope='user', key='OPENROUTER_API_KEY').delete()\n"
            f"LanguageModel.objects.filter(name={MODEL_NAME!r}).delete()\n"
        )


def test_pick_a_model_from_the_providers_list_save_it_and_test_the_connection(
    site: Site, page: Page, vendor: ReplayServer, admin_key: None
) -> None:
    listing = cassette("openrouter/models_list.yaml")[0]
    vendor.queue(listing.reply())
    bodies: list[str] = []

    def keep(response: Response) -> None:
        if "/admin/agents_app/languagemodel/" in response.url:
            with contextlib.suppress(Exception):  # redirects have no body to read
                bodies.append(response.text())

    page.on("response", keep)
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/languagemodel/add/")
    page.locator("#id_name").fill(MODEL_NAME)
    page.locator("#id_provider").select_option("openrouter")
    page.locator("#id_base_url").fill(vendor.url + "/api/v1")

    # The provider's icon shows beside the id field.
    icon = page.locator(".studio-provider-icon")
    expect(icon).to_be_visible()
    expect(icon).to_have_attribute("src", re.compile(r"/api/providers/openrouter/icon$"))

    # Open the picker, search, pick.
    page.get_by_role("button", name="Choose from the provider's models").click()
    expect(page.locator(".studio-picker-status")).to_contain_text("4 models")
    page.get_by_label("Search the provider's models").fill("sonnet")
    option = page.locator(".studio-picker-option", has_text="Anthropic: Claude Sonnet 4")
    expect(option).to_be_visible()
    expect(page.locator(".studio-picker-option")).to_have_count(1)
    shot(page, "studio-model-picker-search")
    option.click()

    expect(page.locator("#id_model")).to_have_value("anthropic/claude-sonnet-4")
    expect(page.locator("#id_input_price")).to_have_value("3")
    expect(page.locator("#id_output_price")).to_have_value("15")
    expect(page.locator("#id_cached_price")).to_have_value("0.3")
    expect(page.locator("#id_capabilities_vision")).to_be_checked()
    expect(page.locator("#id_capabilities_function_calling")).to_be_checked()
    expect(page.locator("#id_capabilities_structured_outputs")).not_to_be_checked()
    expect(page.locator(".studio-picker-status")).to_contain_text("Filled the model id, prices")
    assert len(vendor.requests) == 1  # searching used the cached list

    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    stored = site.python(
        "from agents_app.models import LanguageModel\n"
        f"m = LanguageModel.objects.get(name={MODEL_NAME!r})\n"
        "print(m.model, float(m.input_price), float(m.output_price), float(m.cached_price), "
        "m.capabilities.get('vision'), m.capabilities.get('structuredOutputs'))"
    )
    assert stored.strip().splitlines()[-1] == "anthropic/claude-sonnet-4 3.0 15.0 0.3 True False"

    # Test connection: the "vendor" refuses the key; the page says so in plain words.
    refusal = {"error": {"message": f"No auth credentials found ({PLANTED})", "code": 401}}
    vendor.queue(Reply.json(refusal, status=401))
    page.get_by_role("button", name="Test connection").click()
    result = page.locator(".studio-connection-result")
    expect(result).to_contain_text("The OpenRouter key in OPENROUTER_API_KEY was refused (401).")
    expect(result).to_have_class(re.compile("is-error"))
    shot(page, "studio-model-test-connection-refused")
    sent = vendor.requests[-1]
    assert sent.method == "POST" and sent.json()["max_tokens"] == 1
    assert sent.headers["authorization"] == f"Bearer {PLANTED}"

    # The planted key reached the vendor only: not the page, the picker's JSON, the error.
    page.wait_for_load_state("networkidle")
    assert PLANTED not in page.content()
    assert bodies and not [b for b in bodies if PLANTED in b]
    assert page.console_errors == []  # type: ignore[attr-defined]
