"""Issue #40 item 8: what non-developers edit has a form, not only JSON. The Test model's
script is built from rows (a text reply, a tool call with arguments, a delay), a prompt's
response schema from fields (name, type, required, description), the JSON stays one glance
away, and a JSON mistake is explained in words with the place marked."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot


def _stored(site: Site, expression: str) -> object:
    return json.loads(site.python(f"import json; {expression}").strip().splitlines()[-1])


def test_the_script_builder_writes_the_test_models_replies(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/languagemodel/add/")
    page.locator("#id_name").fill("built_model")
    page.locator("#id_provider").select_option("test")
    page.locator("#id_model").fill("scripted")
    builder = page.locator(".json-builder[data-builder=script]")
    builder.get_by_role("button", name="Add a text reply").click()
    builder.locator(".builder-row[data-kind=reply] [data-field=text]").fill("Hello from the form")
    builder.get_by_role("button", name="Add a tool call").click()
    tool = builder.locator(".builder-row[data-kind=tool]")
    tool.locator("[data-field=name]").fill("lookup_order")
    tool.locator("[data-field=args]").fill('{"order_id": "A-1"}')
    tool.locator("[data-field=delay]").fill("200")
    expected = [
        {"content": "Hello from the form"},
        {"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}], "delayMs": 200},
    ]
    assert json.loads(page.locator("#id_script").input_value()) == expected
    shot(page, "studio-script-builder-1440")
    page.get_by_role("button", name="Save and continue editing", exact=True).click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    stored = _stored(
        site,
        "from agents_app.models import LanguageModel;"
        "print(json.dumps(LanguageModel.objects.get(name='built_model').script))",
    )
    assert stored == expected
    # Opened again, the builder shows the saved rows.
    builder = page.locator(".json-builder[data-builder=script]")
    expect(builder.locator(".builder-row")).to_have_count(2)
    expect(builder.locator("[data-field=name]")).to_have_value("lookup_order")

    # A mistake typed into the JSON is explained in words, with its place marked.
    page.locator("#id_script").fill('[{"content": "a" "b"}]')
    expect(builder.locator(".builder-note")).to_contain_text("has a mistake")
    page.get_by_role("button", name="Save and continue editing", exact=True).click()
    error = page.locator(".form-row.field-script .errorlist")
    expect(error).to_contain_text("a comma is missing between two items")
    expect(error).to_contain_text("⟨here⟩")


def test_the_schema_builder_writes_a_response_schema(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/prompt/add/")
    page.locator("#id_name").fill("built_prompt")
    page.locator("#id_text").fill("Answer with the city.")
    page.get_by_role("tab", name="Model").click()
    page.locator("#id_model").select_option(index=1)
    builder = page.locator(".json-builder[data-builder=response_schema]")
    builder.get_by_role("button", name="Add a field").click()
    row = builder.locator(".builder-row").nth(0)
    row.locator("[data-field=name]").fill("city")
    row.locator("[data-field=description]").fill("Where it is")
    builder.get_by_role("button", name="Add a field").click()
    row = builder.locator(".builder-row").nth(1)
    row.locator("[data-field=name]").fill("tags")
    row.locator("[data-field=type]").select_option("list of texts")
    row.locator("[data-field=required]").uncheck()
    expected = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where it is"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city"],
    }
    assert json.loads(page.locator("#id_response_schema").input_value()) == expected
    shot(page, "studio-schema-builder-1440")
    page.get_by_role("button", name="Save and continue editing", exact=True).click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    stored = _stored(
        site,
        "from agents_app.models import Prompt;"
        "print(json.dumps(Prompt.objects.get(name='built_prompt').response_schema))",
    )
    assert stored == expected


def test_a_schema_the_builder_cannot_show_is_left_as_json(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/prompt/add/")
    page.get_by_role("tab", name="Model").click()
    nested = {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}
    page.locator("#id_response_schema").fill(json.dumps(nested))
    builder = page.locator(".json-builder[data-builder=response_schema]")
    expect(builder.locator(".builder-note")).to_contain_text("edit it as JSON below")
    expect(builder.get_by_role("button", name="Add a field")).to_be_hidden()
    assert json.loads(page.locator("#id_response_schema").input_value()) == nested


DEFINE_SEARCHING_PROMPT = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import ModelDefinition, PromptDefinition
model = ModelDefinition(name="claude_for_options", provider="anthropic", model="claude-sonnet-4-5")
prompt = PromptDefinition.model_validate(
    {"name": "searching_prompt", "model": "claude_for_options", "prompt": "Search well.",
     "tools": [{"name": "provider:web_search", "options": {"max_uses": 2}}]}
)
save_definitions([("model", model), ("prompt", prompt)], strict_code_names=False)
"""


def _open_searching_prompt_s_tools(site: Site, page: Page) -> None:
    """The saved ``searching_prompt`` (one provider tool row) on its Tools tab, signed in."""
    site.python(DEFINE_SEARCHING_PROMPT)
    pk = _stored(
        site,
        "from agents_app.models import Prompt;"
        "print(json.dumps(str(Prompt.objects.get(name='searching_prompt').pk)))",
    )
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/prompt/{pk}/change/")
    page.get_by_role("tab", name="Tools").click()


def test_provider_tool_options_are_fields_from_the_vendors_description(
    site: Site, page: Page
) -> None:
    _open_searching_prompt_s_tools(site, page)
    form = page.locator(".json-builder[data-builder=provider-options]")
    expect(form.locator("[data-field=max_uses]")).to_have_value("2")  # read from the JSON
    form.locator("[data-field=max_uses]").fill("3")
    form.locator("[data-field=allowed_domains]").fill("example.com, docs.example.org")
    form.locator("[data-field='user_location.city']").fill("Lisbon")
    expected = {
        "max_uses": 3,
        "allowed_domains": ["example.com", "docs.example.org"],
        "user_location": {"city": "Lisbon", "type": "approximate"},
    }
    options = page.locator("textarea[name$='-options']").first
    assert json.loads(options.input_value()) == expected
    shot(page, "studio-provider-options-1440")
    page.get_by_role("button", name="Save and continue editing", exact=True).click()
    expect(page.locator(".messagelist .success")).to_contain_text("was changed successfully")
    stored = _stored(
        site,
        "from agents_app.models import PromptTool;"
        "print(json.dumps(PromptTool.objects.get(prompt__name='searching_prompt').options))",
    )
    assert stored == expected


def test_every_tool_row_suggests_names_from_the_page_s_one_list(site: Site, page: Page) -> None:
    """The tool rows share one ``<datalist>`` (forms/fields.py, ``shared_list``): a saved
    row, the extra row and a row added in the browser all suggest the same names."""
    _open_searching_prompt_s_tools(site, page)
    page.locator("#tool_entries-group .add-row a").click()
    boxes = page.locator("input[name^='tool_entries-'][name$='-name']:not([name*='__prefix__'])")
    expect(boxes).to_have_count(3)  # the saved row, the extra row, the added row
    suggested = boxes.evaluate_all(
        "els => els.map(el => el.list ? [...el.list.options].map(o => o.value) : null)"
    )
    assert all(names and "searching_prompt" in names for names in suggested), suggested
    assert suggested[0] == suggested[1] == suggested[2]
    assert page.locator("datalist#studio-tool-names").count() == 1
