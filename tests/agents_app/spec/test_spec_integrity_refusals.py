"""Issue #38 items 3-5: settings that would be accepted and then do nothing are refused at save
time, with the field and what to do instead, identically by ``import_definitions`` (exit code
and message), the definition-write API (the 400 body) and the studio forms
(``runtime.definitions.entry_rules``, called from ``runtime.definitions.validation``)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.definitions import rows as definition_services
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form, set_rows
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.spec.refusals import import_refused as _import

pytestmark = pytest.mark.django_db

PROMPT_ADD = reverse("admin:agents_app_prompt_add")
AGENT_ADD = reverse("admin:agents_app_agent_add")
NO_TOOLS_MODEL = {
    "name": "plain",
    "provider": "test",
    "model": "scripted",
    "capabilities": {"functionCalling": False},
}


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known code registry: ``lookup_order`` is a code tool."""
    monkeypatch.setattr(
        definition_services, "registered_code_names", lambda: ({"lookup_order"}, set())
    )


def _model(name: str = "m", **extra: Any) -> dict[str, Any]:
    return {"name": name, "provider": "test", "model": "scripted", **extra}


def _prompt(tools: list[Any], model: str = "m", name: str = "p") -> dict[str, Any]:
    return {"name": name, "model": model, "prompt": "x", "tools": tools}


CODE_TOOL_INCLUDE = {"name": "lookup_order", "includeErrors": False}
INCLUDE_MESSAGE = (
    "includeErrors does nothing on 'lookup_order', which is a code tool: it applies to "
    "sub-prompts. Remove it."
)


def test_spec_item5_entry_options_refused_identically_by_import_api_and_studio(
    tmp_path: Path, as_: Any, ops: Any, staff: Client
) -> None:
    stderr, error = _import(
        tmp_path, {"models/m": _model(), "prompts/p": _prompt([CODE_TOOL_INCLUDE])}
    )
    assert f"prompts/p.json: tools.0.includeErrors: {INCLUDE_MESSAGE}" in stderr
    assert error == "Nothing was imported: 1 error."
    assert not Prompt.objects.exists()

    LanguageModel.objects.create(name="m", provider="test", model="scripted")
    refused = as_(ops).post_json("/api/prompts", _prompt([CODE_TOOL_INCLUDE]))
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"]["tools.0.includeErrors"] == INCLUDE_MESSAGE

    data = fill(read_form(staff, PROMPT_ADD), name="p", model=LanguageModel.objects.get().pk)
    set_rows(data, "tool_entries", [{"name": "lookup_order", "include_errors": ""}])
    form = post(staff, PROMPT_ADD, data)
    assert INCLUDE_MESSAGE in sum(errors_of(form).values(), []), errors_of(form)
    assert not Prompt.objects.exists()


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (
            {"name": "mcp:web/echo", "env": {"X": "1"}},
            "env",
            "env does nothing on 'mcp:web/echo', which is an MCP tool",
        ),
        (
            {"name": "lookup_order", "initUserMessageProperty": "q"},
            "initUserMessageProperty",
            "initUserMessageProperty does nothing on 'lookup_order', which is a code tool",
        ),
        (
            {"name": "house", "blocking": True},
            "blocking",
            "blocking does nothing on 'house', which is a prompt (a sub-prompt)",
        ),
        (
            {"name": "helper", "immediate": True},
            "immediate",
            "immediate does nothing on 'helper', which is an agent handed off to",
        ),
        (
            {"name": "helper", "scopedEnv": ["X"]},
            "scopedEnv",
            "scopedEnv does nothing on 'helper', which is an agent handed off to",
        ),
        (
            {"name": "helper", "includeTextResponse": False},
            "includeTextResponse",
            "includeTextResponse does nothing on 'helper', which is an agent handed off to",
        ),
        (
            {"name": "provider:web_search", "env": {"X": "1"}},
            "env",
            "env does nothing on 'provider:web_search', which is a provider tool",
        ),
    ],
)
def test_spec_item5_entry_options_on_kinds_where_they_do_nothing_are_refused_api(
    as_: Any, ops: Any, entry: dict[str, Any], field: str, message: str
) -> None:
    model = LanguageModel.objects.create(name="m", provider="anthropic", model="c")
    house = Prompt.objects.create(name="house", model=model, text="x")
    Agent.objects.create(name="helper", side_a_prompt=house)
    from agents_app.models import McpServer

    McpServer.objects.create(name="web", url="http://127.0.0.1:9/mcp", tools=[{"name": "echo"}])

    refused = as_(ops).post_json("/api/prompts", _prompt([entry]))

    assert refused.status_code == 400, refused.json()
    assert refused.json()["fieldErrors"][f"tools.0.{field}"].startswith(message)
    assert not Prompt.objects.filter(name="p").exists()


def test_spec_item5_included_providers_refused_on_a_non_openrouter_model(tmp_path: Path) -> None:
    stderr, _ = _import(tmp_path, {"models/m": _model(includedProviders=["openai"])})
    assert "models/m.json: includedProviders: includedProviders applies only to OpenRouter" in (
        stderr
    )
    assert not LanguageModel.objects.exists()


def test_spec_item5_max_session_turns_and_side_b_refused_on_ai_human(tmp_path: Path) -> None:
    agent = {
        "name": "a",
        # Typed: without ``type`` these sides are spec 0.2.0's two AIs (issue #54).
        "type": "ai_human",
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
        "maxSessionTurns": 4,
    }
    stderr, _ = _import(
        tmp_path, {"models/m": _model(), "prompts/p": _prompt([]), "agents/a": agent}
    )
    assert "agents/a.json: maxSessionTurns: maxSessionTurns applies only to dual_ai" in stderr
    assert "agents/a.json: sideB: Side B applies only to dual_ai agents" in stderr
    assert not Agent.objects.exists()


def test_spec_item4_dual_ai_agent_without_a_relationship_is_refused(
    tmp_path: Path,
) -> None:
    debate = {
        "name": "debate",
        "type": "dual_ai",
        "sideA": {"prompt": "q"},
        "sideB": {"prompt": "q"},
    }
    files = {
        "models/m": _model(),
        "prompts/q": _prompt([], name="q"),
        "prompts/p": _prompt(["debate"]),
        "agents/debate": debate,
    }
    stderr, _ = _import(tmp_path, files)
    assert (
        "prompts/p.json: tools.0: 'debate' is a dual_ai agent, which cannot take over a "
        "conversation: list it with blocking or resumable (a subagent), or set exposeAsTool on it."
    ) in stderr


@pytest.mark.parametrize("name", ["lookup_order", "q"])
def test_spec_item4_resumable_on_a_code_tool_or_prompt_is_refused(
    tmp_path: Path, name: str
) -> None:
    entry = {"name": name, "resumable": {"receives_messages": "side_a"}}
    files = {
        "models/m": _model(),
        "prompts/q": _prompt([], name="q"),
        "prompts/p": _prompt([entry]),
    }
    stderr, _ = _import(tmp_path, files)
    assert f"prompts/p.json: tools.0.resumable: resumable does nothing on '{name}'" in stderr


def test_spec_item3_tools_on_a_model_without_function_calling_are_refused(
    tmp_path: Path, as_: Any, ops: Any
) -> None:
    stderr, _ = _import(
        tmp_path, {"models/plain": NO_TOOLS_MODEL, "prompts/p": _prompt(["lookup_order"], "plain")}
    )
    assert "prompts/p.json: tools: Model 'plain' cannot call tools" in stderr

    LanguageModel.objects.create(
        name="plain", provider="test", model="s", capabilities={"functionCalling": False}
    )
    LanguageModel.objects.create(name="m", provider="test", model="s")
    as_(ops).post_json("/api/prompts", _prompt([], "plain", name="quiet"))
    refused = as_(ops).post_json(
        "/api/agents",
        {
            "name": "a",
            "sideA": {"prompt": "quiet", "stopTool": "done", "stopToolResponseProperty": "x"},
        },
    )
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"]["sideA.prompt"].startswith(
        "Model 'plain' of prompt 'quiet' cannot call tools (functionCalling: false), so done"
    )


def test_spec_item5_studio_agent_form_refuses_max_session_turns_on_ai_human(
    staff: Client,
) -> None:
    model = LanguageModel.objects.create(name="m", provider="test", model="s")
    prompt = Prompt.objects.create(name="p", model=model, text="x")
    data = fill(read_form(staff, AGENT_ADD), name="a", side_a_prompt=prompt.pk)
    data = fill(data, max_session_turns="5")
    form = post(staff, AGENT_ADD, data)
    assert any(
        m.startswith("maxSessionTurns applies only to dual_ai agents")
        for m in sum(errors_of(form).values(), [])
    ), errors_of(form)
    assert not Agent.objects.exists()


def _reasoning_prompt(**reasoning: Any) -> dict[str, Any]:
    return {"name": "p", "model": "m", "prompt": "x", "reasoning": reasoning}


@pytest.mark.parametrize(
    ("provider", "option", "value"),
    [("openai", "maxTokens", 2000), ("openai", "include", True), ("google", "include", True)],
)
def test_spec_item6_reasoning_options_a_provider_never_reads_are_refused(
    tmp_path: Path, provider: str, option: str, value: Any
) -> None:
    files = {
        "models/m": {"name": "m", "provider": provider, "model": "some-model"},
        "prompts/p": _reasoning_prompt(**{option: value}),
    }
    stderr, error = _import(tmp_path, files)
    assert (
        f"prompts/p.json: reasoning.{option}: reasoning.{option} does nothing on model 'm' "
        f"({provider} does not read it)"
    ) in stderr, stderr
    assert not Prompt.objects.exists()


def test_spec_item6_reasoning_options_a_provider_reads_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "prompts").mkdir()
    model = {"name": "m", "provider": "anthropic", "model": "claude-x"}
    (tmp_path / "models" / "m.json").write_text(json.dumps(model))
    prompt = _reasoning_prompt(maxTokens=2000, include=True)
    (tmp_path / "prompts" / "p.json").write_text(json.dumps(prompt))
    call_command("import_definitions", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    assert Prompt.objects.filter(name="p").exists()


def test_spec_item3_a_model_cannot_drop_function_calling_under_prompts_with_tools(
    as_: Any, ops: Any
) -> None:
    """The model's side of item 3: saving ``functionCalling: false`` on a model that prompts
    with tools run on (or fall back to) would silently strip their tools at run time."""
    client = as_(ops)
    spare = {"name": "spare", "provider": "test", "model": "s"}
    main = {"name": "main", "provider": "test", "model": "s", "fallbacks": ["spare"]}
    for body in (spare, main):
        assert client.post_json("/api/models", body).status_code in (200, 201)
    created = client.post_json("/api/prompts", _prompt(["lookup_order"], "main"))
    assert created.status_code in (200, 201), created.content
    for body in (main, spare):
        refused = _put(client, f"/api/models/{body['name']}", {**body, **NO_TOOLS})
        assert refused.status_code == 400, refused.content
        assert refused.json()["fieldErrors"]["capabilities.functionCalling"].startswith(
            "Prompts 'p' call tools on this model"
        )
    assert LanguageModel.objects.get(name="spare").capabilities.get("functionCalling") is not False
    # Without the prompt's tools the same save is accepted.
    assert _put(client, "/api/prompts/p", _prompt([], "main")).status_code == 200
    assert _put(client, "/api/models/main", {**main, **NO_TOOLS}).status_code == 200


NO_TOOLS = {"capabilities": {"functionCalling": False}}


def _put(client: Any, path: str, body: dict[str, Any]) -> Any:
    return client.put(path, body, content_type="application/json")
