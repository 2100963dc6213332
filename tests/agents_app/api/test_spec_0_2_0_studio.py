"""Issue #54 at the API and studio doors: the reference studio's agent editor payloads (the
snake_case ``GET /api/agents/{name}`` shape with ``side_*_backing`` and ``primary``) and the
studio's forms save spec 0.2.0 agents; what they cannot hold is refused with the field.
Rows A1, A6 and C1 of shared/reference/spec-0.2.0-surface.md."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.definitions.rows import agent_definition
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

AGENT_ADD = reverse("admin:agents_app_agent_add")


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def prompt() -> Prompt:
    model = LanguageModel.objects.create(name="m", provider="test", model="scripted")
    return Prompt.objects.create(name="p", model=model, text="You help.")


def _debate(name: str = "debate") -> None:
    definition_saves.save_definitions(
        [
            ("m", ModelDefinition(name="m", provider="test", model="scripted")),
            ("p", PromptDefinition(name="p", model="m", prompt="Argue.")),
            (
                "a",
                AgentDefinition(
                    name=name,
                    type="dual_ai",
                    max_session_turns=4,
                    side_a=SideConfig(prompt="p"),
                    side_b=SideConfig(prompt="p"),
                ),
            ),
        ],
        strict_code_names=False,
    )


def _agent(client: Any, name: str) -> dict[str, Any]:
    shown: dict[str, Any] = client.get(f"/api/agents/{name}").json()["agent"]
    return shown


# --- the reference studio's agent editor --------------------------------------------------------


def test_A1_reference_studio_editor_payloads_with_backings_save_0_2_0(
    as_: Any, ops: Any, prompt: Prompt
) -> None:
    client = as_(ops)
    body = {
        "name": "desk",
        "title": "Desk",
        "side_a_backing": "prompt",
        "side_a_agent_prompt": "p",
        "side_a_handler": None,
        "side_a_subagents": [],
        "side_b_backing": "human",
        "side_b_label": "Customer",
        "side_b_agent_prompt": None,
        "side_b_stop_on_response": True,
        "side_b_max_steps": None,
        "primary": True,
        "parent_hooks": [],
    }

    created = client.post_json("/api/agents", body)

    assert created.status_code == 201, created.content
    shown = created.json()["agent"]
    assert (shown["side_a_backing"], shown["side_b_backing"], shown["primary"]) == (
        "prompt",
        "human",
        True,
    )
    assert shown["definition"] == {
        "name": "desk",
        "title": "Desk",
        "sideA": {"prompt": "p"},
        "sideB": {"human": True, "label": "Customer"},
        "state": "draft",  # a new agent starts as a draft (issue #55 item 9)
    }
    # The person moves to side A: the AI is side B.
    moved = client.put(
        "/api/agents/desk",
        {
            **shown,
            "side_a_backing": "human",
            "side_b_backing": "prompt",
            "side_b_agent_prompt": "p",
        },
        content_type="application/json",
    )
    assert moved.status_code == 200, moved.content
    shown = moved.json()["agent"]
    assert (shown["side_a_backing"], shown["side_b_backing"]) == ("human", "prompt")
    assert agent_definition(Agent.objects.get(name="desk")).human_side() == "a"


def test_A1_an_echoed_0_1_0_agent_stays_0_1_0(as_: Any, ops: Any) -> None:
    _debate()
    client = as_(ops)
    shown = _agent(client, "debate")

    saved = client.put(
        "/api/agents/debate", {**shown, "title": "Tea or coffee"}, content_type="application/json"
    )

    assert saved.status_code == 200, saved.content
    row = Agent.objects.get(name="debate")
    assert (row.spec_version, row.max_session_turns, row.title) == ("0.1.0", 4, "Tea or coffee")


def test_A6_primary_false_from_the_editor_moves_a_0_1_0_agent_to_0_2_0(as_: Any, ops: Any) -> None:
    _debate()
    client = as_(ops)

    saved = client.put(
        "/api/agents/debate",
        {**_agent(client, "debate"), "primary": False},
        content_type="application/json",
    )

    assert saved.status_code == 200, saved.content
    assert saved.json()["agent"]["definition"] == {
        "name": "debate",
        "title": "debate",  # the listing's title falls back to the name; the editor sends it
        "maxSessionTurns": 2,  # 4 turns are 2 exchanges: the debate runs as long as before
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
        "primary": False,
    }


# --- the studio's forms -----------------------------------------------------------------------------


def test_A1_studio_form_saves_a_person_on_side_a_in_spec_0_2_0(
    staff: Client, prompt: Prompt
) -> None:
    data = fill(
        read_form(staff, AGENT_ADD),
        name="kiosk",
        type="ai_human",
        human_side="a",
        side_a_prompt="",
        side_b_prompt=prompt.pk,
        side_a_label="Visitor",
    )
    refused = post(staff, AGENT_ADD, data)  # 0.1.0 (the default) cannot say it
    assert errors_of(refused)["human_side"] == [
        "A person on side A needs spec 0.2.0: choose it under Spec (max session turns then "
        "counts exchanges)."
    ]

    saved = post(staff, AGENT_ADD, fill(data, spec_version="0.2.0"))

    assert saved.status_code == 302, errors_of(saved)
    definition = agent_definition(Agent.objects.get(name="kiosk"))
    assert definition.dump() == {
        "name": "kiosk",
        "sideA": {"human": True, "label": "Visitor"},
        "sideB": {"prompt": "p"},
        "state": "draft",  # the studio's form starts a new agent as a draft (issue #55 item 9)
    }


def test_A6_studio_form_leaves_an_agent_out_of_the_picker_in_spec_0_2_0(
    staff: Client, prompt: Prompt
) -> None:
    data = fill(read_form(staff, AGENT_ADD), name="inner", side_a_prompt=prompt.pk, primary=False)
    refused = post(staff, AGENT_ADD, data)
    assert errors_of(refused)["primary"][0].startswith(
        "Leaving it out of the picker needs spec 0.2.0"
    )

    saved = post(staff, AGENT_ADD, fill(data, spec_version="0.2.0"))

    assert saved.status_code == 302, errors_of(saved)
    row = Agent.objects.get(name="inner")
    assert (row.primary, row.spec_version) == (False, "0.2.0")
    assert agent_definition(row).dump()["sideB"] == {"human": True}


def test_C1_the_studio_model_form_keeps_capabilities_it_does_not_show(staff: Client) -> None:
    caps = {"supportsImages": True, "supportsToolCalls": True, "maxContextTokens": 8000}
    model = LanguageModel.objects.create(
        name="m", provider="test", model="scripted", capabilities=caps
    )
    url = reverse("admin:agents_app_languagemodel_change", args=[model.pk])

    saved = post(staff, url, fill(read_form(staff, url), capabilities_vision=False))

    assert saved.status_code == 302, errors_of(saved)
    model.refresh_from_db()
    assert model.capabilities == {
        "supportsImages": False,
        "supportsToolCalls": True,
        "maxContextTokens": 8000,
        "supportsJsonMode": True,
    }


def test_B1_the_reference_prompt_editor_reads_and_writes_variables(
    as_: Any, ops: Any, prompt: Prompt
) -> None:
    client = as_(ops)
    shown = client.get("/api/prompts/p").json()["prompt"]
    assert shown["variables"] == []
    declared = [{"name": "SHOP_ID", "type": "text", "required": True}]

    saved = client.put(
        "/api/prompts/p",
        {**shown, "variables": declared, "env": {"A": "1"}, "tenvs": {"A": "1"}},
        content_type="application/json",
    )

    assert saved.status_code == 200, saved.content
    assert saved.json()["prompt"]["variables"] == declared
    assert Prompt.objects.get(name="p").variables == declared


def test_A7_parent_hooks_on_an_agent_not_exposed_as_a_tool_are_refused_not_dropped(
    as_: Any, ops: Any, prompt: Prompt
) -> None:
    """The listing sends ``parentHooks: []`` and an editor echoes it (accepted, the agent
    stays 0.1.0); hooks asked for by an agent no parent can start as a subagent are refused
    with a sentence naming the field (the rest of row A7:
    tests/agents_app/services/test_spec_0_2_0_parent_hooks.py)."""
    client = as_(ops)
    body = {"name": "child", "side_a_agent_prompt": "p", "parent_hooks": []}
    assert client.post_json("/api/agents", body).status_code == 201
    assert Agent.objects.get(name="child").spec_version == "0.1.0"
    hooks = [{"hook": "redact_pii", "reason": "The parent must redact.", "stage": "before_parent"}]
    for key in ("parentHooks", "parent_hooks"):
        refused = client.put(
            "/api/agents/child",
            {**body, "side_b_backing": "human", key: hooks},
            content_type="application/json",
        )
        assert refused.status_code == 400, refused.content
        assert refused.json()["fieldErrors"]["parentHooks"].startswith(
            "Only an agent other agents can start as a subagent (exposeAsTool: true)"
        )
    assert Agent.objects.get(name="child").parent_hooks == []
