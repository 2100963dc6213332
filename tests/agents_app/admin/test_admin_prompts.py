"""The prompts page: parts, tools and env values inline, validated as one definition."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from agents_app.base.code_registry import get_registry
from agents_app.models import Agent, EnvValue, LanguageModel, Prompt, PromptPart, PromptTool
from agents_app.services.definitions import rows as definition_services
from agents_app.services.definitions.rows import (
    build_catalog,
    prompt_definition,
    validate_definition,
)
from tests.agents_app.admin.admin_pages import (
    change_row,
    errors_of,
    fill,
    post,
    read_form,
    set_rows,
)

ADD = reverse("admin:agents_app_prompt_add")
pytestmark = pytest.mark.django_db


def change_url(prompt: Prompt) -> str:
    return reverse("admin:agents_app_prompt_change", args=[prompt.pk])


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def model() -> LanguageModel:
    return LanguageModel.objects.create(name="gpt", provider="openai", model="gpt-4o-mini")


@pytest.fixture
def house_style(model: LanguageModel) -> Prompt:
    return Prompt.objects.create(name="house_style", model=model, text="Be brief.")


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known code registry: unknown tool and hook names are errors, as in production."""
    monkeypatch.setattr(
        definition_services,
        "registered_code_names",
        lambda: ({"lookup_order"}, {"first_hook", "second_hook", "h"}),
    )


def add_form(client: Client, model: LanguageModel, **fields: Any) -> dict[str, Any]:
    data = fill(read_form(client, ADD), name="support", model=model.pk)
    return fill(data, **fields)


def test_creating_a_prompt_with_parts_and_tools(
    staff: Client, model: Any, house_style: Any
) -> None:
    helper = Agent.objects.create(name="helper", side_a_prompt=house_style)
    data = add_form(
        staff,
        model,
        reasoning_effort="high",
        # No maxTokens: an OpenAI model never reads it, so it is refused (issue #38 item 6).
        reasoning_max_tokens="",
        required_schema='{"type": "object", "properties": {"q": {"type": "string"}}}',
        tool_description="Answers support questions.",
        parallel_tool_calls="false",
    )
    set_rows(
        data,
        "parts",
        [
            {"type": "text", "content": "You are the support desk."},
            {"type": "include", "include": house_style.pk},
            {"type": "env", "env_key": "COMPANY_NAME"},
        ],
    )
    set_rows(
        data,
        "tool_entries",
        [
            {"name": "house_style", "include_errors": False},
            {"name": "helper", "resumable": True, "max_instances": "2", "blocking": "true"},
        ],
    )
    set_rows(
        data, "env_values", [{"key": "COMPANY_NAME", "value_type": "text", "value_input": "Acme"}]
    )

    response = post(staff, ADD, data)

    assert response.status_code == 302, errors_of(response)
    prompt = Prompt.objects.get(name="support")
    assert [(p.position, p.type) for p in prompt.parts.all()] == [
        (0, "text"),
        (1, "include"),
        (2, "env"),
    ]
    assert prompt.parts.get(type="include").include == house_style
    tools = list(prompt.tool_entries.all())
    assert [(t.position, t.name) for t in tools] == [(0, "house_style"), (1, "helper")]
    assert tools[0].include_errors is False and tools[0].include_text_response is True
    assert tools[1].resumable and tools[1].max_instances == 2 and tools[1].blocking is True
    assert prompt.reasoning == {"effort": "high"}
    assert prompt.parallel_tool_calls is False
    assert prompt.required_schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    env = prompt.env_values.get()
    assert (env.scope, env.key, env.value, env.updated_by.username) == (
        "prompt",
        "COMPANY_NAME",
        "Acme",
        "ops",
    )
    defn = prompt_definition(prompt)
    assert validate_definition(defn, build_catalog([defn])) == []
    assert helper.pk


def test_text_and_parts_together_are_rejected_where_they_are(staff: Client, model: Any) -> None:
    data = add_form(staff, model, text="Plain text")
    set_rows(data, "parts", [{"type": "text", "content": "A part"}])

    response = post(staff, ADD, data)

    errors = errors_of(response)
    assert "not both" in errors["text"][0]
    assert "not both" in errors["parts"][0]
    assert not Prompt.objects.exists()


def test_an_include_cycle_is_reported_on_the_include_row(staff: Client, model: Any) -> None:
    a = Prompt.objects.create(name="a", model=model, text="")
    b = Prompt.objects.create(name="b", model=model)
    PromptPart.objects.create(prompt=b, type="include", include=a)
    data = read_form(staff, change_url(a))
    set_rows(
        data, "parts", [{"type": "text", "content": "Intro"}, {"type": "include", "include": b.pk}]
    )

    response = post(staff, change_url(a), data)

    assert errors_of(response)["parts-1-include"] == ["Prompt includes form a cycle: a → b → a."]
    assert not a.parts.exists()


def test_a_prompt_cannot_include_itself(staff: Client, model: Any) -> None:
    a = Prompt.objects.create(name="a", model=model)
    data = read_form(staff, change_url(a))
    set_rows(data, "parts", [{"type": "include", "include": a.pk}])

    response = post(staff, change_url(a), data)

    assert errors_of(response)["parts-0-include"] == ["Prompt includes form a cycle: a → a."]


def test_a_rename_cannot_hide_an_include_cycle(staff: Client, model: Any) -> None:
    a = Prompt.objects.create(name="a", model=model)
    b = Prompt.objects.create(name="b", model=model)
    PromptPart.objects.create(prompt=b, type="include", include=a)
    data = fill(read_form(staff, change_url(a)), name="a2")
    set_rows(data, "parts", [{"type": "include", "include": b.pk}])

    response = post(staff, change_url(a), data)

    assert errors_of(response)["parts-0-include"] == ["Prompt includes form a cycle: a2 → b → a2."]
    a.refresh_from_db()
    assert a.name == "a"


def test_an_include_part_needs_a_prompt(staff: Client, model: Any) -> None:
    data = add_form(staff, model)
    set_rows(data, "parts", [{"type": "include"}])

    response = post(staff, ADD, data)

    assert errors_of(response)["parts-0-include"] == ["Choose the prompt to include."]


def test_an_unknown_tool_is_reported_on_its_row(staff: Client, model: Any) -> None:
    data = add_form(staff, model)
    set_rows(data, "tool_entries", [{"name": "lookup_order"}, {"name": "no_such_tool"}])

    response = post(staff, ADD, data)

    assert errors_of(response)["tool_entries-1-name"] == [
        "'no_such_tool' is not a known tool, prompt or agent."
    ]
    assert not Prompt.objects.exists() and not PromptTool.objects.exists()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ('{"type": "string"}', "The required schema must describe an object."),
        ("[1, 2]", "Required schema must be an object."),
    ],
)
def test_the_required_schema_must_be_an_object(
    staff: Client, model: Any, schema: str, message: str
) -> None:
    response = post(staff, ADD, add_form(staff, model, required_schema=schema))

    assert errors_of(response)["required_schema"] == [message]


def test_reasoning_max_tokens_must_be_positive(staff: Client, model: Any) -> None:
    response = post(staff, ADD, add_form(staff, model, reasoning_max_tokens="0"))

    assert "reasoning_max_tokens" in errors_of(response)
    assert not Prompt.objects.exists()


def test_an_unregistered_hook_is_rejected(staff: Client, model: Any) -> None:
    response = post(staff, ADD, add_form(staff, model, hooks="first_hook, typo_hook"))

    assert errors_of(response)["hooks"] == ["Hook 'typo_hook' is not registered."]


def test_the_tool_name_suggests_code_tools_with_their_descriptions(staff: Client) -> None:
    page = staff.get(ADD).content.decode()

    assert '<option value="lookup_order">code tool: ' in page
    # The list next to the picker says what each tool does, in the registry's words.
    description = get_registry().tools["lookup_order"].description
    assert description and escape(description) in page


def test_a_bad_name_is_rejected(staff: Client, model: Any) -> None:
    response = post(staff, ADD, add_form(staff, model, name="a/../b"))

    assert "Name may use only letters" in errors_of(response)["name"][0]


def test_rows_can_be_reordered(staff: Client, model: Any) -> None:
    prompt = Prompt.objects.create(name="p", model=model)
    for i, text in enumerate(["one", "two", "three"]):
        PromptPart.objects.create(prompt=prompt, position=i, type="text", content=text)
    data = change_row(read_form(staff, change_url(prompt)), "parts", 2, order="1")

    assert post(staff, change_url(prompt), data).status_code == 302
    assert [p.content for p in prompt.parts.all()] == ["three", "one", "two"]
    assert [p.position for p in prompt.parts.all()] == [0, 1, 2]


def test_deleting_a_part_keeps_the_rest_in_order(staff: Client, model: Any) -> None:
    prompt = Prompt.objects.create(name="p", model=model)
    for i, text in enumerate(["one", "two", "three"]):
        PromptPart.objects.create(prompt=prompt, position=i, type="text", content=text)
    data = change_row(read_form(staff, change_url(prompt)), "parts", 0, DELETE=True)

    assert post(staff, change_url(prompt), data).status_code == 302
    assert [p.content for p in prompt.parts.all()] == ["two", "three"]


def test_hooks_and_tool_env_are_typed_as_text(staff: Client, model: Any, house_style: Any) -> None:
    data = add_form(staff, model, hooks="first_hook, second_hook")
    set_rows(data, "tool_entries", [{"name": "house_style", "env": "REGION=eu\nTIER = gold"}])

    assert post(staff, ADD, data).status_code == 302
    prompt = Prompt.objects.get(name="support")
    assert prompt.hooks == ["first_hook", "second_hook"]
    assert prompt.tool_entries.get().env == {"REGION": "eu", "TIER": "gold"}
    page = staff.get(change_url(prompt)).content.decode()
    assert "first_hook, second_hook" in page
    assert "REGION=eu" in page


def test_a_bad_tool_env_line_is_explained(staff: Client, model: Any, house_style: Any) -> None:
    data = add_form(staff, model)
    set_rows(data, "tool_entries", [{"name": "house_style", "env": "REGION eu"}])

    response = post(staff, ADD, data)

    assert errors_of(response)["tool_entries-0-env"] == ["Line 1: write each value as NAME=value."]


def test_the_tool_name_suggests_known_prompts_and_agents(staff: Client, house_style: Any) -> None:
    Agent.objects.create(name="helper_agent", side_a_prompt=house_style)

    page = staff.get(ADD).content.decode()

    assert '<option value="house_style">prompt</option>' in page
    assert '<option value="helper_agent">agent</option>' in page


def test_an_existing_prompt_saves_unchanged(staff: Client, model: Any, house_style: Any) -> None:
    prompt = Prompt.objects.create(
        name="p", model=model, reasoning={"effort": "low", "exclude": True}, hooks=["h"]
    )
    PromptPart.objects.create(prompt=prompt, type="include", include=house_style)
    PromptTool.objects.create(prompt=prompt, name="house_style", env={"A": "1"})
    before = json.dumps(prompt_definition(prompt).dump(), sort_keys=True)

    response = post(staff, change_url(prompt), read_form(staff, change_url(prompt)))

    assert response.status_code == 302, errors_of(response)
    prompt.refresh_from_db()
    assert json.dumps(prompt_definition(prompt).dump(), sort_keys=True) == before
    assert EnvValue.objects.count() == 0


def test_an_unset_required_schema_is_an_empty_box(staff: Client, model: Any) -> None:
    prompt = Prompt.objects.create(name="p", model=model)

    assert read_form(staff, change_url(prompt))["required_schema"] == ""


def test_spec_requires_approval_is_saved_from_the_form_and_refused_on_an_agent(
    staff: Client, model: Any, house_style: Any
) -> None:
    Agent.objects.create(name="helper", side_a_prompt=house_style)
    data = add_form(staff, model)
    set_rows(
        data,
        "tool_entries",
        [{"name": "helper", "requires_approval": "true"}],
    )
    refused = post(staff, ADD, data)
    assert any(
        "requiresApproval works only on tools; 'helper' is an agent" in e
        for e in sum(errors_of(refused).values(), [])
    ), errors_of(refused)
    assert not Prompt.objects.filter(name="support").exists()

    data = add_form(staff, model)
    set_rows(
        data,
        "tool_entries",
        [{"name": "lookup_order", "requires_approval": "true", "wait_timeout_seconds": "90"}],
    )
    response = post(staff, ADD, data)
    assert response.status_code == 302, errors_of(response)
    tool = Prompt.objects.get(name="support").tool_entries.get()
    assert tool.requires_approval is True and tool.wait_timeout_seconds == 90
