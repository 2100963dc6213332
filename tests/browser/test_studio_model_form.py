"""Issue #40 item 11: the model form shows what the chosen provider reads. With Test chosen,
OpenAI's controls are hidden and the provider model id is not required."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)


def test_a_test_model_needs_no_openai_controls(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/languagemodel/add/")
    page.locator("#id_provider").select_option("openai")
    expect(page.locator("#id_api")).to_be_visible()
    page.locator("#id_provider").select_option("test")
    expect(page.locator("#id_api")).to_be_hidden()
    expect(page.locator("#id_model")).to_have_value("")  # optional for Test: left empty
    expect(page.locator("#id_base_url")).to_be_hidden()
    page.locator("#id_name").fill("form-test-model")
    shot(page, "studio-model-form-test-1440")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    out = site.python(
        "from agents_app.models import LanguageModel\n"
        "print(LanguageModel.objects.get(name='form-test-model').model)"
    )
    assert out.strip().splitlines()[-1] == "scripted"
    expect(page.locator("#id_api")).to_be_hidden()
