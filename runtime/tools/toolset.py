"""Which tools a prompt offers the model, and what each name resolves to.

A prompt ``tools`` entry resolves, in this order, to an MCP server's tool
(``mcp:<server>/<tool>``, ``runtime.mcp.servers``), a native (code) tool, a prompt (a
sub-prompt), or an agent: an agent with ``exposeAsTool`` runs in a
new child thread and returns its answer (spec §7.2); any other ``ai_human``
agent is a handoff (the thread switches agents). The side's ``stopTool`` and
``endSessionTool`` are offered too; when no code defines them the engine
supplies a built-in tool that just succeeds (so a stop tool needs no code).
An entry with ``optional: ENV_NAME`` exists only when that env value is truthy.
An agent entry with ``blocking`` set is a subagent tool (even without
``exposeAsTool``); a ``resumable`` one is not offered by name at all: the
session adds the subagent lifecycle tools instead (``runtime.delegation.subagents``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from runtime.core.a2a_agents import agent_name
from runtime.core.provider_tools import ProviderToolChoice
from runtime.core.spec import (
    PROVIDER_TOOL_PREFIX,
    AgentDefinition,
    PromptDefinition,
    ResumableConfig,
    SessionToolBinding,
    SideConfig,
    ToolConfig,
)
from runtime.definitions.loader import DefinitionLoader
from runtime.knowledge import memory_names
from runtime.knowledge.names import base_name
from runtime.mcp.servers import McpTools, split_name, wire_name
from runtime.providers.base import ToolSchema
from runtime.tools.a2a_tools import A2aAgents, a2a_tool
from runtime.tools.knowledge_tools import KnowledgeBases, knowledge_tool
from runtime.tools.memory_tools import MemoryEmbedder, memory_tools
from runtime.tools.registry import EMPTY_OBJECT_SCHEMA, Registry, ToolDefinition

logger = logging.getLogger("runtime.tools.toolset")
ToolKind = Literal["native", "prompt", "agent", "handoff", "stop", "mcp"]
EnvLookup = Callable[[str], Awaitable[str | None]]
TRUTHY = ("true", "1", "yes")


@dataclass(slots=True)
class OfferedTool:
    """One tool the model may call: its schema and what runs when it is called."""

    name: str
    kind: ToolKind
    schema: ToolSchema
    entry: ToolConfig
    tool: ToolDefinition | None = None
    prompt: PromptDefinition | None = None
    agent: AgentDefinition | None = None
    # Engine-injected tools (the subagent lifecycle): ``(scope, call, args, slot) -> ToolResult``.
    handler: Callable[..., Awaitable[Any]] | None = None
    mcp: tuple[str, str] | None = None  # (server, tool) of an ``mcp:`` entry


async def offered_tools(
    defs: DefinitionLoader,
    registry: Registry,
    prompt: PromptDefinition,
    side: SideConfig | None,
    env: EnvLookup,
    mcp: McpTools | None = None,
    a2a: A2aAgents | None = None,
    knowledge: KnowledgeBases | None = None,
    memory: MemoryEmbedder | None = None,
) -> dict[str, OfferedTool]:
    """The prompt's tools (plus the side's stop and end-session tools), by name."""
    out: dict[str, OfferedTool] = {}
    for entry in _entries(prompt):
        if entry.name == memory_names.PERSON:  # remember, recall, forget (memory_tools)
            out.update(_memory_offered(entry, memory))
            continue
        if isinstance(entry.resumable, ResumableConfig):
            continue  # a resumable subagent: reached through subagent_create (runtime.delegation.subagents)
        if entry.optional and (await env(entry.optional) or "").strip().lower() not in TRUTHY:
            continue
        if entry.name.startswith(PROVIDER_TOOL_PREFIX):
            continue  # the vendor runs it: sent as a ``ProviderToolChoice`` (provider_choices)
        offered = await resolve(defs, registry, entry, mcp, env, a2a, knowledge)
        if offered is None:
            logger.warning(
                "Prompt %s lists tool %r, which resolves to nothing", prompt.name, entry.name
            )
            continue
        out[offered.name] = offered
    for name, prop in _side_tools(side):
        if name not in out:
            out[name] = await resolve(defs, registry, ToolConfig(name=name)) or stop_tool(
                name, prop
            )
    for kind, binding in side.session_tools().items() if side else ():
        if binding.name not in out:
            out[binding.name] = await resolve(
                defs, registry, ToolConfig(name=binding.name)
            ) or session_tool(kind, binding)
    return out


async def provider_choices(prompt: PromptDefinition, env: EnvLookup) -> list[ProviderToolChoice]:
    """The prompt's ``provider:<name>`` tools with their options, for the vendor to run
    (an entry with ``optional: ENV_NAME`` only when that env value is truthy)."""
    out = []
    for entry in _entries(prompt):
        if not entry.name.startswith(PROVIDER_TOOL_PREFIX):
            continue
        if entry.optional and (await env(entry.optional) or "").strip().lower() not in TRUTHY:
            continue
        name = entry.name[len(PROVIDER_TOOL_PREFIX) :]
        out.append(ProviderToolChoice(name, dict(entry.options or {})))
    return out


def _memory_offered(entry: ToolConfig, embedder: MemoryEmbedder | None) -> dict[str, OfferedTool]:
    out = {}
    for tool in memory_tools(embedder):
        schema = ToolSchema(tool.name, tool.description, tool.args_schema)
        out[tool.name] = OfferedTool(tool.name, "native", schema, entry, tool=tool)
    return out


def _entries(prompt: PromptDefinition) -> list[ToolConfig]:
    return [ToolConfig(name=t) if isinstance(t, str) else t for t in prompt.tools or []]


def _side_tools(side: SideConfig | None) -> list[tuple[str, str | None]]:
    if side is None:
        return []
    out = []
    if side.stop_tool:
        out.append((side.stop_tool, side.stop_tool_response_property))
    if side.end_session_tool:
        out.append((side.end_session_tool, None))
    return out


async def resolve(
    defs: DefinitionLoader,
    registry: Registry,
    entry: ToolConfig,
    mcp: McpTools | None = None,
    env: EnvLookup | None = None,
    a2a: A2aAgents | None = None,
    knowledge: KnowledgeBases | None = None,
) -> OfferedTool | None:
    """What a tool name means: native tool → prompt → agent; ``None`` when nothing matches.

    An ``mcp:<server>/<tool>`` name is an MCP server's tool; the model sees it as
    ``<server>__<tool>`` (providers refuse ``:`` and ``/`` in tool names). An
    ``a2a:<name>`` name is a remote A2A agent, a native tool named ``<name>``
    (``runtime.tools.a2a_tools``); a ``knowledge:<name>`` name is a knowledge base, a native
    tool named ``search_<name>`` (``runtime.tools.knowledge_tools``).
    """
    name = entry.name
    base = base_name(name)
    if base is not None:
        base_info = await knowledge.base(base) if knowledge is not None else None
        if knowledge is None or base_info is None:
            return None
        found = knowledge_tool(base, base_info, knowledge)
        schema = ToolSchema(found.name, found.description, found.args_schema)
        return OfferedTool(found.name, "native", schema, entry, tool=found)
    remote = agent_name(name)
    if remote is not None:
        remote_info = await a2a.agent(remote, env) if a2a is not None else None
        if a2a is None or remote_info is None:
            return None
        tool = a2a_tool(remote, remote_info, a2a)
        schema = ToolSchema(tool.name, tool.description, tool.args_schema)
        return OfferedTool(tool.name, "native", schema, entry, tool=tool)
    parts = split_name(name)
    if parts is not None:
        info = await mcp.tool(*parts, env=env) if mcp is not None else None
        if info is None:
            return None
        wire = wire_name(*parts)
        schema = ToolSchema(wire, info.description or f"{parts[1]} ({parts[0]})", info.input_schema)
        return OfferedTool(wire, "mcp", schema, entry, mcp=parts)
    native = registry.tools.get(name)
    if native is not None:
        schema = ToolSchema(name, native.description, native.args_schema)
        return OfferedTool(name, "native", schema, entry, tool=native)
    prompt = await defs.find_prompt(name)
    if prompt is not None:
        schema = ToolSchema(
            name, prompt.tool_description or f"Run the {name} prompt", _schema_of(prompt)
        )
        return OfferedTool(name, "prompt", schema, entry, prompt=prompt)
    agent = await defs.find_agent(name)
    if agent is not None:
        return await _agent_tool(defs, agent, entry)
    return None


async def _agent_tool(
    defs: DefinitionLoader, agent: AgentDefinition, entry: ToolConfig
) -> OfferedTool | None:
    first = await defs.find_prompt(agent.main_prompt())
    title = agent.title or agent.name
    subagent = entry.blocking is not None
    if agent.expose_as_tool or subagent:
        description = agent.tool_description or f"Ask the {title} agent and get its answer"
        schema = _schema_of(first) if first and first.required_schema else dict(MESSAGE_SCHEMA)
        return OfferedTool(
            entry.name, "agent", ToolSchema(entry.name, description, schema), entry, agent=agent
        )
    if agent.type == "ai_human":
        description = agent.tool_description or f"Hand off conversation to {title} agent"
        schema = _schema_of(first) if first else dict(EMPTY_OBJECT_SCHEMA)
        return OfferedTool(
            entry.name, "handoff", ToolSchema(entry.name, description, schema), entry, agent=agent
        )
    return None


def stop_tool(name: str, response_property: str | None) -> OfferedTool:
    """A built-in tool for a stop/end-session tool no code defines: it accepts and succeeds."""
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    if response_property:
        schema["properties"][response_property] = {"type": "string"}
        schema["required"] = [response_property]
    description = "Call this when you are done" + (
        f" (give the {response_property})" if response_property else ""
    )
    return OfferedTool(
        name, "stop", ToolSchema(name, description + ".", schema), ToolConfig(name=name)
    )


_SESSION_TOOL_TEXT = {
    "session_stop": "Call this when your task is done: it ends the session with your result.",
    "session_fail": "Call this when you cannot do your task: it ends the session as a failure.",
    "session_status": "Call this to update your status as your parent sees it (you go on).",
}


def session_tool(kind: str, binding: SessionToolBinding) -> OfferedTool:
    """A built-in tool for a session tool no code defines: its mapped arguments, accepted."""
    properties: dict[str, Any] = {}
    if binding.message_property:
        properties[binding.message_property] = {"type": "string"}
    if binding.attachments_property:
        properties[binding.attachments_property] = {
            "type": "array",
            "items": {"type": "string"},
            "description": "Paths of files of this thread (/attachments/...) to return",
        }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if binding.message_property:
        schema["required"] = [binding.message_property]
    description = _SESSION_TOOL_TEXT[kind]
    name = binding.name
    return OfferedTool(name, "stop", ToolSchema(name, description, schema), ToolConfig(name=name))


def _schema_of(prompt: PromptDefinition) -> dict[str, Any]:
    return dict(prompt.required_schema or EMPTY_OBJECT_SCHEMA)


MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask the agent"}},
    "required": ["message"],
}


# --- a call's arguments, as its entry reads them ------------------------------------------


def schema_problem(schema: dict[str, Any] | None, args: dict[str, Any]) -> str | None:
    """The first JSON-schema violation of ``args`` as ``[path] message``, or ``None``."""
    if not schema:
        return None
    # Imported on the first call with a schema: jsonschema and what it brings cost 0.2 s of
    # CPU, which every process paid at start (a web server, a command) for a worker's need.
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(args), key=lambda e: list(e.path))
    if not errors:
        return None
    return "; ".join(
        f"[{'.'.join(str(p) for p in e.path) or '(root)'}] {e.message}" for e in errors
    )


def init_paths(entry: ToolConfig, args: dict[str, Any]) -> list[str]:
    """The paths named by the entry's ``initAttachmentsProperty`` argument (a list or one)."""
    prop = entry.init_attachments_property
    value = args.get(prop) if prop else None
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def init_name(entry: ToolConfig, args: dict[str, Any]) -> str:
    """The child's display name from the entry's ``initAgentNameProperty`` argument."""
    prop = entry.init_agent_name_property
    value = args.get(prop) if prop else None
    return value.strip()[:200] if isinstance(value, str) else ""
