"""The Structure page's tree (pages.agent_structure) and the page that draws it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from agents_app.base.code_registry import get_registry, reset_registry
from agents_app.models import (
    Agent,
    EnvValue,
    LanguageModel,
    McpServer,
    Prompt,
    PromptPart,
    PromptTool,
    ScheduledEffect,
    Thread,
)
from agents_app.pages.agent_structure import Node, agent_structure
from runtime.tools.registry import Registry, define_hook, define_tool

pytestmark = pytest.mark.django_db


def _names(node: Node) -> list[tuple[str, str, str]]:
    return [(n.kind, n.label, n.name) for n in node.walk()]


def _find(node: Node, name: str) -> Node:
    return next(n for n in node.walk() if n.name == name and not n.repeat)


@pytest.fixture
def demo() -> Iterator[None]:
    reset_registry(None)  # the real discovery: agents/tools holds the demo's lookup_order
    call_command("load_demo", stdout=io.StringIO(), stderr=io.StringIO())
    yield
    reset_registry(None)


def test_demo_support_agent_structure_is_complete_and_has_nothing_missing(demo: None) -> None:
    agent = Agent.objects.get(name="support_agent")
    structure = agent_structure(agent)
    assert _names(structure.root) == [
        ("agent", "Agent", "support_agent"),
        ("side", "Side", "Side A"),
        ("prompt", "Prompt", "support_prompt"),
        ("model", "Model", "support_model"),
        ("prompt", "Included prompt", "house_style"),
        ("model", "Model", "support_model"),
        ("tool", "Code tool", "lookup_order"),
    ]
    assert structure.warning_count == 0
    tool = _find(structure.root, "lookup_order")
    assert tool.detail.startswith("Look up an order by its number")
    assert tool.ref is not None and tool.ref.anchor == "tools"
    side = _find(structure.root, "Side A")
    assert side.detail == "Support"
    assert side.notes == ["Its turn ends at a text answer, or 10 steps"]
    prompt = _find(structure.root, "support_prompt")
    assert prompt.ref is not None and prompt.ref.pk == Prompt.objects.get(name="support_prompt").pk


def test_demo_classifier_side_names_its_stop_tool_and_debate_draws_both_sides(demo: None) -> None:
    classifier = agent_structure(Agent.objects.get(name="intent_classifier"))
    assert classifier.warning_count == 0
    assert "the tool classify" in _find(classifier.root, "Side A").notes[0]
    assert classifier.root.notes == ["Prompts may call it as a tool (a subagent)."]
    debate = agent_structure(Agent.objects.get(name="debate_agent"))
    sides = [n for n in debate.root.children if n.kind == "side"]
    assert [(s.name, s.detail, s.children[0].name) for s in sides] == [
        ("Side A", "Pro", "debate_pro"),
        ("Side B", "Con", "debate_con"),
    ]


async def _noop(state: Any) -> str:
    return "ok"


@pytest.fixture
def broken() -> Iterator[Agent]:
    """An agent whose prompt reaches every kind of tool, with something wrong on each."""
    quiet = define_tool(
        {
            "description": "",
            "execute": _noop,
            "name": "quiet_tool",
            "variables": [{"name": "QUIET_KEY", "type": "secret", "description": "Key"}],
        }
    )
    hook = define_hook("before_create_message", _noop, id="audit")  # type: ignore[arg-type]
    reset_registry(Registry(quiet, hook))
    model = LanguageModel.objects.create(name="m", provider="test", model="t")
    helper = Prompt.objects.create(name="helper", model=model, text="Help.")
    main = Prompt.objects.create(name="main", model=model, hooks=["audit", "gone_hook"])
    PromptPart.objects.create(prompt=main, position=0, type="env", env_key="COMPANY")
    PromptPart.objects.create(prompt=main, position=1, type="include", include=helper)
    server = McpServer.objects.create(
        name="docs",
        url="http://127.0.0.1:9/mcp",
        tools=[
            {"name": "search", "description": "Search the docs", "inputSchema": {}},
            {"name": "blank", "description": "", "inputSchema": {}},
        ],
    )
    names = [
        "quiet_tool",
        "helper",
        "deleted_tool",
        "mcp:docs/search",
        "mcp:docs/blank",
        "mcp:docs/missing",
        "mcp:nowhere/x",
        "provider:web_search",
        "main_agent",
    ]
    for i, name in enumerate(names):
        PromptTool.objects.create(prompt=main, position=i, name=name)
    PromptTool.objects.filter(name="quiet_tool").update(requires_approval=True)
    PromptTool.objects.filter(name="mcp:docs/search").update(optional="USE_DOCS")
    agent = Agent.objects.create(
        name="main_agent", side_a_prompt=main, side_a_stop_tool="finish", side_a_max_steps=4
    )
    thread = Thread.objects.create(agent=agent, origin_agent=agent)
    from django.utils import timezone

    ScheduledEffect.objects.create(thread=thread, name="remind_later", due_at=timezone.now())
    assert server.pk
    yield agent
    reset_registry(None)


def test_every_kind_of_tool_is_drawn_with_what_is_missing(broken: Agent) -> None:
    structure = agent_structure(broken)
    root = structure.root
    labels = {n.name: n.label for n in root.walk() if not n.repeat}
    assert labels["quiet_tool"] == "Code tool"
    assert labels["helper"] == "Included prompt"  # drawn first as the include
    assert labels["mcp:docs/search"] == "MCP tool"
    assert labels["provider:web_search"] == "Provider tool"
    assert labels["audit"] == "Hook (prompt)"
    assert labels["remind_later"] == "Effect (scheduled in its threads)"
    warnings = {n.name: n.warnings for n in root.walk() if n.warnings}
    assert warnings["quiet_tool"] == [
        "This tool has no description: the model is not told what it does.",
        "Env value QUIET_KEY is not set (agent, prompt or instance), and it is required.",
    ]
    assert warnings["deleted_tool"] == [
        "Nothing is called deleted_tool: no code tool, prompt or agent."
    ]
    assert warnings["mcp:docs/blank"] == [
        "This tool has no description: the model is not told what it does."
    ]
    assert warnings["mcp:docs/missing"] == [
        "docs does not offer missing (as of its last tool list)."
    ]
    assert warnings["mcp:nowhere/x"] == ["There is no MCP server called nowhere."]
    assert warnings["provider:web_search"] == [
        "The model's provider does not run a tool called web_search (it runs: none)."
    ]
    assert warnings["gone_hook"] == ["No hook called gone_hook is defined in code."]
    assert warnings["remind_later"] == [
        "No effect called remind_later is defined in code any more."
    ]
    assert warnings["Side A"] == [
        "The stop tool finish is not among main's tools: the model is offered it with no "
        "description, as a tool that only stops. Add it to the prompt's tools to say when "
        "to call it."
    ]
    assert "mcp:docs/search" not in warnings
    # The prompt offered again as a sub-prompt and the agent offering itself: drawn once.
    repeats = [(n.name, n.label) for n in root.walk() if n.repeat]
    assert repeats == [("helper", "Sub-prompt (tool)"), ("main_agent", "Subagent (tool)")]
    assert "Env value COMPANY is set nowhere here" in _find(root, "COMPANY").notes[0]
    assert _find(root, "quiet_tool").notes == ["Each call waits for a person's approval."]
    assert _find(root, "mcp:docs/search").notes == [
        "Offered only when the env value USE_DOCS is true."
    ]
    assert structure.warning_count == sum(len(w) for w in warnings.values()) == 10


def test_setting_the_env_value_clears_its_warning(broken: Agent) -> None:
    assert agent_structure(broken).warning_count == 10
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="QUIET_KEY", value_type="secret")
    row.value = "sk-set"
    row.save()
    after = agent_structure(broken)
    assert after.warning_count == 9
    assert _find(after.root, "quiet_tool").warnings == [
        "This tool has no description: the model is not told what it does."
    ]


def test_structure_page_draws_links_and_warnings(broken: Agent, admin_client: Client) -> None:
    url = reverse("admin:agents_app_agent_structure", args=[broken.pk])
    page = admin_client.get(url).content.decode()
    assert "10 things to fix" in page
    assert reverse("admin:agents_app_prompt_change", args=[broken.side_a_prompt.pk]) in page
    assert reverse("admin:studio_catalog") + "#tools" in page
    assert reverse("admin:agents_app_mcpserver_change", args=[McpServer.objects.get().pk]) in page
    assert "Nothing is called deleted_tool" in page
    assert " style=" not in page.split("<body")[1]  # CSP: classes only
    # Linked from the agent's page and the agents list.
    assert (
        url
        in admin_client.get(
            reverse("admin:agents_app_agent_change", args=[broken.pk])
        ).content.decode()
    )
    assert url in admin_client.get(reverse("admin:agents_app_agent_changelist")).content.decode()
    assert admin_client.get(url.replace(str(broken.pk), "999999")).status_code == 404
    assert get_registry() is not None
