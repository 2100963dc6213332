"""The definitions catalog: agents, prompts, models, tools and hooks (reads; the
studio editor's writes are in ``definition_writes``).

``GET /api/agents`` is open to every authenticated user (authoring fields for
staff only); the rest is staff only, as in the reference. Shapes follow the
reference's snake_case listing; staff also get ``definition``, the spec's
camelCase definition object from ``services.definitions.rows`` (secret env values
withheld as null).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from django.http import HttpRequest, JsonResponse
from ninja import Field, Query, Router, Schema

from agents_app import wire
from agents_app.api.authed import AuthedRequest
from agents_app.api.definition_responses import (
    AgentOneOut,
    AgentsOut,
    CurlOut,
    HandlersOut,
    HooksOut,
    ModelOneOut,
    ModelsOut,
    PromptOneOut,
    PromptsOut,
    ToolEntryOut,
    ToolOneOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.code_registry import get_registry
from agents_app.base.errors import NotFound
from agents_app.base.icons import icon_url, request_origin
from agents_app.base.permissions import AGENTS_VIEW, may
from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.pages import model_curl
from agents_app.reasoning import agent_returns_reasoning
from agents_app.selectors import agents_for
from agents_app.services.definitions import rows as defs
from runtime.tools.registry import args_json_schema

router = Router(tags=["catalog"])


def _agent_row(name: str) -> Agent:
    row = (
        Agent.objects.select_related("side_a_prompt", "side_b_prompt").filter(name=name).first()
        if len(name) <= 128
        else None
    )
    if row is None:
        raise NotFound(f"Agent not found: {name}")
    return row


def _agent(row: Agent, staff: bool, origin: str | None) -> dict[str, Any]:
    a, b = wire.side_backings(row)
    item: dict[str, Any] = {
        "id": row.name,
        "name": row.name,
        "title": row.title or row.name,
        "type": row.type,
        "side_a_backing": a,
        "side_b_backing": b,
        "description": row.description or None,
        "tool_description": row.tool_description or None,
        "icon": icon_url(row.icon, origin),
        # Spec 0.2.0: false keeps it out of the chat's agent picker (listed, still reachable).
        "primary": row.primary,
        # Spec 0.2.0: the hooks this agent requires on its parents, as written (camelCase).
        "parentHooks": list(row.parent_hooks or []),
        "created_at": wire.seconds(row.created_at),
        "packed": False,
        # The chat page offers "Show reasoning" only for agents whose replies carry it.
        "reasoning": agent_returns_reasoning(row),
        # Ours: the reasons a person may give when rating a reply (docs/observability.md).
        "feedback_reasons": list(row.feedback_reasons),
        # Ours: what the chat shows of tool calls, null for the default (docs/chat.md).
        "tool_activity": row.tool_activity or None,
        # Ours: what a message posted while a session runs does (docs/automation.md).
        "mid_run_messages": row.mid_run_messages,
    }
    if staff:
        item.update(
            {
                "side_a_label": row.side_a_label or None,
                "side_a_agent_prompt": row.side_a_prompt.name if row.side_a_prompt else None,
                "side_a_handler": row.side_a_handler or None,
                "side_b_label": row.side_b_label or None,
                "side_b_agent_prompt": row.side_b_prompt.name if row.side_b_prompt else None,
                "side_b_handler": row.side_b_handler or None,
                # Spec 0.2.0 relationships as written (camelCase SubagentRelationship).
                "side_a_subagents": list(row.side_a_subagents or []),
                "side_b_subagents": list(row.side_b_subagents or []),
                "max_session_turns": row.max_session_turns,
                "expose_as_tool": row.expose_as_tool,
                "definition": defs.agent_definition(row).dump(),
            }
        )
    return item


@router.get("/agents", response={200: AgentsOut, **ERRORS}, tags=["catalog"], summary="Agents")
def agent_list(request: AuthedRequest) -> dict[str, Any]:
    # The definition fields only for those who may read agents in the studio.
    staff = may(request.auth, AGENTS_VIEW)
    # Others see only the published agents offered to them (selectors.agents_for).
    user = request.auth
    related = ("side_a_prompt__model", "side_b_prompt__model")
    rows = agents_for(user).select_related(*related).order_by("name")
    origin = request_origin(request)
    return {"agents": [_agent(r, staff, origin) for r in rows]}


@router.get("/agents/{name}", response={200: AgentOneOut, **ERRORS}, summary="One agent (staff)")
def agent_get(request: HttpRequest, name: str) -> dict[str, Any]:
    return {"agent": agent_get_data(name, request_origin(request))}


def agent_get_data(name: str, origin: str | None = None) -> dict[str, Any]:
    return _agent(_agent_row(name), True, origin)


def _prompt_text(row: Prompt, definition: Any) -> str:
    if isinstance(definition.prompt, str):
        return definition.prompt
    return json.dumps([part.dump() for part in definition.prompt])


def _prompt(row: Prompt) -> dict[str, Any]:
    definition = defs.prompt_definition(row)
    return {
        "id": row.name,
        "name": row.name,
        "tool_description": row.tool_description,
        "prompt": _prompt_text(row, definition),
        "required_schema": row.required_schema,
        "model_id": row.model.name,
        "model_name": row.model.model,
        "model_provider": row.model.provider,
        "include_chat": row.include_chat,
        "include_past_tools": row.include_past_tools,
        "parallel_tool_calls": row.parallel_tool_calls,
        "tool_choice": row.tool_choice,
        "tools": definition.tool_names(),
        "reasoning": row.reasoning,
        "hooks": list(row.hooks or []),
        # Spec 0.2.0: the values the prompt declares it needs (``PromptVariable``).
        "variables": [v.dump() for v in definition.variables or []],
        "created_at": wire.seconds(row.created_at),
        "definition": definition.dump(),
    }


@router.get("/prompts", response={200: PromptsOut, **ERRORS}, summary="Prompts (staff)")
def prompt_list(request: HttpRequest) -> dict[str, Any]:
    return {
        "prompts": [_prompt(r) for r in Prompt.objects.select_related("model").order_by("name")]
    }


@router.get("/prompts/{name}", response={200: PromptOneOut, **ERRORS}, summary="One prompt (staff)")
def prompt_get(request: HttpRequest, name: str) -> dict[str, Any]:
    return {"prompt": prompt_get_data(name)}


def prompt_get_data(name: str) -> dict[str, Any]:
    row = Prompt.objects.select_related("model").filter(name=name[:129]).first()
    if row is None:
        raise NotFound(f"Prompt not found: {name}")
    return _prompt(row)


def _model(row: LanguageModel) -> dict[str, Any]:
    definition = defs.model_definition(row)
    return {
        "id": row.name,
        "name": row.name,
        "provider": row.provider,
        "model": row.model,
        "input_price": definition.input_price,
        "output_price": definition.output_price,
        "cached_price": definition.cached_price,
        "included_providers": list(row.included_providers or []),
        "fallbacks": definition.fallbacks or [],
        "capabilities": row.capabilities or {},
        "created_at": wire.seconds(row.created_at),
        "definition": definition.dump(),
    }


@router.get("/models", response={200: ModelsOut, **ERRORS}, summary="Models (staff)")
def model_list(request: HttpRequest) -> dict[str, Any]:
    return {"models": [_model(r) for r in LanguageModel.objects.order_by("name")]}


@router.get("/models/{name}", response={200: ModelOneOut, **ERRORS}, summary="One model (staff)")
def model_get(request: HttpRequest, name: str) -> dict[str, Any]:
    return {"model": model_get_data(name)}


@router.get(
    "/models/{name}/curl-data", response={200: CurlOut, **ERRORS}, summary="cURL template (staff)"
)
def model_curl_data(request: HttpRequest, name: str) -> Any:
    response = JsonResponse({"curl": model_curl.model_curl(name)})
    response["Cache-Control"] = "no-store"
    return response


def model_get_data(name: str) -> dict[str, Any]:
    row = LanguageModel.objects.filter(name=name[:129]).first()
    if row is None:
        raise NotFound(f"Model not found: {name}")
    return _model(row)


class ToolQuery(Schema):
    type: Literal["tools", "prompts", "agents"] | None = None
    schema_: bool = Field(False, alias="schema")


def _tool_entries(kind: str | None, with_schema: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if kind in (None, "tools"):
        for tool in get_registry().tools.values():
            entry: dict[str, Any] = {"description": tool.description, "type": "tool"}
            if with_schema:
                entry["schema"] = tool.args_schema
            out[tool.name] = entry
    if kind in (None, "prompts"):
        for prompt in Prompt.objects.select_related("model").order_by("name"):
            entry = {"description": prompt.tool_description, "type": "prompt"}
            entry["model"] = prompt.model.name
            if with_schema:
                entry["schema"] = prompt.required_schema or args_json_schema(None)
            out.setdefault(prompt.name, entry)
    agents = Agent.objects.order_by("name")
    if kind == "agents":
        agents = agents.filter(expose_as_tool=True)
    if kind in (None, "agents"):
        for agent in agents:
            entry = {
                "description": agent.tool_description or agent.description,
                "type": "agent" if kind == "agents" else "handoff",
            }
            out.setdefault(agent.name, entry)
    return out


@router.get(
    "/tools",
    response={200: dict[str, ToolEntryOut], **ERRORS},
    summary="Tools, prompts, agents (staff)",
)
def tool_list(request: HttpRequest, params: Query[ToolQuery]) -> dict[str, Any]:
    return _tool_entries(params.type, params.schema_)


@router.get("/tools/{name}", response={200: ToolOneOut, **ERRORS}, summary="One tool (staff)")
def tool_get(request: HttpRequest, name: str) -> dict[str, Any]:
    entry = _tool_entries(None, True).get(name)
    if entry is None:
        raise NotFound(f"Tool not found: {name}")
    return {"name": name, "hasError": False, **entry}


@router.get("/hooks", response={200: HooksOut, **ERRORS}, summary="Hooks (staff)")
def hook_list(request: HttpRequest) -> dict[str, Any]:
    hooks = sorted(get_registry().hooks.values(), key=lambda h: (h.hook, h.id))
    return {"hooks": [{"id": h.id, "hook": h.hook, "description": h.description} for h in hooks]}


@router.get("/handlers", response={200: HandlersOut, **ERRORS}, summary="Side handlers (staff)")
def handler_list(request: HttpRequest) -> dict[str, Any]:
    """The side handlers (spec 0.2.0 ``defineHandler``) a side may name, by name."""
    handlers = sorted(get_registry().handlers.values(), key=lambda h: h.name)
    return {"handlers": [{"name": h.name, "description": h.description} for h in handlers]}
