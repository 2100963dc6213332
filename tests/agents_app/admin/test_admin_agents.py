"""The agents page: §9 rules reported on the field they are about; invalid input changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent, EnvValue, LanguageModel, Prompt
from agents_app.services.definitions import rows as definition_services
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.definitions.rows import (
    agent_definition,
    build_catalog,
    validate_definition,
)
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form, set_rows

ADD = reverse("admin:agents_app_agent_add")
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        definition_services, "registered_code_names", lambda: ({"finish", "hang_up"}, set())
    )


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def prompt() -> Prompt:
    model = LanguageModel.objects.create(name="gpt", provider="openai", model="gpt-4o-mini")
    return Prompt.objects.create(name="support_prompt", model=model, text="Help.")


def add_form(client: Client, prompt: Prompt, **fields: Any) -> dict[str, Any]:
    data = fill(read_form(client, ADD), name="support", side_a_prompt=prompt.pk)
    return fill(data, **fields)


def test_creating_an_agent_with_stop_conditions_and_env(staff: Client, prompt: Prompt) -> None:
    data = add_form(
        staff,
        prompt,
        title="Support",
        side_a_stop_tool="finish",
        side_a_stop_tool_response_property="outcome",
        side_a_max_steps="8",
        side_a_end_session_tool="hang_up",
        expose_as_tool=True,
        tool_description="Handles support questions.",
        tags="support, tier-1",
        icon="/static/icons/support.svg",
    )
    set_rows(
        data,
        "env_values",
        [{"key": "ZENDESK_TOKEN", "value_type": "secret", "value_input": "tok-1"}],
    )

    response = post(staff, ADD, data)

    assert response.status_code == 302, errors_of(response)
    agent = Agent.objects.get(name="support")
    assert (agent.side_a_stop_tool, agent.side_a_stop_tool_response_property) == (
        "finish",
        "outcome",
    )
    assert agent.side_a_max_steps == 8
    assert agent.tags == ["support", "tier-1"]
    assert agent.side_b_prompt is None
    env = agent.env_values.get()
    assert (env.scope, env.value_type, env.value) == ("agent", "secret", "tok-1")
    defn = agent_definition(agent)
    assert validate_definition(defn, build_catalog([defn])) == []


def test_a_dual_ai_agent_with_both_sides(staff: Client, prompt: Prompt) -> None:
    data = add_form(staff, prompt, type="dual_ai", side_b_prompt=prompt.pk, side_b_max_steps="3")

    assert post(staff, ADD, data).status_code == 302
    agent = Agent.objects.get()
    assert agent.side_b_prompt == prompt and agent.side_b_max_steps == 3


def test_max_turns_is_saved_on_its_side_and_kept_in_the_definition(
    staff: Client, prompt: Prompt
) -> None:
    """AgentBuilder's ``maxTurns`` ("Maximum turns this side can take") is a field of the side
    in the studio too: saved as such, not as ``maxSteps`` (issue #38)."""
    data = add_form(staff, prompt, type="dual_ai", side_b_prompt=prompt.pk, side_a_max_turns="2")

    assert post(staff, ADD, data).status_code == 302
    side_a = agent_definition(Agent.objects.get()).side_a
    assert (side_a.max_turns, side_a.max_steps) == (2, None)
    assert agent_definition(Agent.objects.get()).dump()["sideA"]["maxTurns"] == 2


RULES = [
    ({"type": "dual_ai"}, "side_b_prompt", "A dual_ai agent needs a side B with a prompt."),
    (
        {"expose_as_tool": True},
        "tool_description",
        "An agent exposed as a tool needs a tool description",
    ),
    (
        {"side_a_stop_tool": "finish"},
        "side_a_stop_tool_response_property",
        "When a stop tool is set, name the property",
    ),
    ({"side_a_max_steps": "0"}, "side_a_max_steps", "Max steps must be a positive whole number."),
    (
        {"type": "dual_ai", "side_b_prompt": "PROMPT", "side_b_max_steps": "-2"},
        "side_b_max_steps",
        "Max steps must be a positive whole number.",
    ),
    ({"max_session_turns": "0"}, "max_session_turns", "Max session turns must be a positive"),
    ({"icon": "javascript:alert(1)"}, "icon", "Icon must be an absolute path"),
    ({"icon": "data:image/svg+xml;base64,PHN2Zz4="}, "icon", "Icon must be an absolute path"),
    ({"icon": "//evil.example/x.png"}, "icon", "Icon must be an absolute path"),
    ({"name": "../escape"}, "name", "Name may use only letters"),
    ({"side_a_end_session_tool": "nope"}, "side_a_end_session_tool", "'nope' is not a known tool"),
    ({"side_a_max_turns": "0"}, "side_a_max_turns", "Max turns must be a positive whole number."),
]


@pytest.mark.parametrize(("fields", "field", "message"), RULES)
def test_a_broken_rule_is_reported_on_its_field_and_nothing_is_created(
    staff: Client, prompt: Prompt, fields: dict[str, Any], field: str, message: str
) -> None:
    fields = {k: (prompt.pk if v == "PROMPT" else v) for k, v in fields.items()}
    data = add_form(staff, prompt, **fields)
    set_rows(data, "env_values", [{"key": "K", "value_type": "text", "value_input": "v"}])

    response = post(staff, ADD, data)

    assert response.status_code == 200
    errors = errors_of(response)
    assert list(errors) == [field], errors
    assert message in errors[field][0]
    assert not Agent.objects.exists()
    assert not EnvValue.objects.exists()


@pytest.mark.parametrize(("fields", "field", "message"), RULES[:8])
def test_a_broken_rule_on_an_existing_agent_changes_nothing(
    staff: Client, prompt: Prompt, fields: dict[str, Any], field: str, message: str
) -> None:
    agent = Agent.objects.create(name="support", title="Before", side_a_prompt=prompt)
    url = reverse("admin:agents_app_agent_change", args=[agent.pk])
    fields = {k: (prompt.pk if v == "PROMPT" else v) for k, v in fields.items()}
    data = fill(read_form(staff, url), title="After", **fields)

    response = post(staff, url, data)

    assert message in errors_of(response)[field][0]
    agent.refresh_from_db()
    assert agent.title == "Before"


def test_side_prompts_are_chosen_from_a_select(staff: Client, prompt: Prompt) -> None:
    page = staff.get(ADD).content.decode()

    assert '<select name="side_a_prompt"' in page
    assert f'<option value="{prompt.pk}">support_prompt</option>' in page


def test_stop_conditions_are_explained_next_to_their_fields(staff: Client) -> None:
    page = staff.get(ADD).content.decode()

    for text in (
        "End this side's turn as soon as the model answers",
        "Required when a stop tool is set",
        "a step is one model request plus the tools it called",
        "End the whole session (not only the turn)",
        "Values above 250 are capped at 250",
    ):
        assert text in page
    for title in ("General", "Side A", "Side B (dual_ai only)", "As a tool"):
        assert f">{title}</h2>" in page or f">{title}</summary>" in page


def test_feedback_reasons_survive_a_studio_save_and_are_edited_there(
    staff: Client, prompt: Prompt
) -> None:
    """An agent imported with feedbackReasons keeps them when saved in the studio without
    touching them, and the studio edits them one per line (issue #42)."""
    from runtime.core.spec import AgentDefinition

    definition_saves.save_definitions(
        [
            (
                "agent",
                AgentDefinition.model_validate(
                    {
                        "name": "support",
                        "sideA": {"prompt": "support_prompt"},
                        "feedbackReasons": ["Wrong answer", "Too long, and rude"],
                    }
                ),
            )
        ],
        strict_code_names=False,
    )
    agent = Agent.objects.get(name="support")
    url = reverse("admin:agents_app_agent_change", args=[agent.pk])
    untouched = read_form(staff, url)
    assert untouched["feedback_reasons"] == "Wrong answer\nToo long, and rude"
    post(staff, url, fill(untouched, title="Support"))
    agent.refresh_from_db()
    assert agent.title == "Support"
    assert agent.feedback_reasons == ["Wrong answer", "Too long, and rude"]
    post(staff, url, fill(read_form(staff, url), feedback_reasons="Off topic\n\n  Wrong answer "))
    agent.refresh_from_db()
    assert agent.feedback_reasons == ["Off topic", "Wrong answer"]
    assert agent_definition(agent).feedback_reasons == ["Off topic", "Wrong answer"]
