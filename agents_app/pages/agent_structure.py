"""What an agent can reach, as a tree of plain data for the studio's Structure page.

From the agent: its sides, each side's prompt, that prompt's model, included prompts, env
parts, tools (code tools, prompts run as sub-prompts, agents run as subagents, ``provider:``
and ``mcp:`` tools) and hooks, recursively; plus the effects its threads have scheduled.
Every node says what is wrong with it in words (``warnings``): a tool the model is offered
with no description, an env value that is set nowhere the studio can see, a name that
refers to nothing. A definition reached twice is drawn once; later mentions are marked
``repeat`` and not expanded (a prompt that offers its own agent as a tool would otherwise
never end).

The view turns ``Ref`` into links; nothing here knows about URLs or HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents_app.base.code_registry import get_registry
from agents_app.models import (
    Agent,
    LanguageModel,
    McpServer,
    Prompt,
    PromptPart,
    PromptTool,
    ScheduledEffect,
)
from agents_app.pages.variable_scan import agent_env_levels
from agents_app.services.definitions.mcp_servers import server_runtime
from agents_app.services.definitions.rows import model_definition
from runtime.core.spec import PROVIDER_TOOL_PREFIX
from runtime.mcp.servers import split_name
from runtime.providers.offers import allowed_offers
from runtime.providers.registry import KEY_NAMES

# Effects are scheduled by code at run time, so what a tool may schedule is not declared
# anywhere; the page lists the effect names this agent's threads have actually scheduled.
EFFECTS_SHOWN = 20


@dataclass(frozen=True)
class Ref:
    """What a node links to: ``kind`` is agent, prompt, model, mcp_server (with ``pk``),
    or catalog (``anchor`` tools/hooks/effects) or env (the agent's env panel)."""

    kind: str
    pk: int | None = None
    anchor: str = ""


@dataclass
class Node:
    kind: str  # agent, side, prompt, model, include, env, tool, hook, effect, group
    name: str
    label: str  # what it is, in words ("Code tool", "Sub-prompt", "Side A")
    detail: str = ""
    ref: Ref | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    repeat: bool = False  # drawn in full elsewhere on the page

    def walk(self) -> list[Node]:
        """This node and every node under it, depth first."""
        out = [self]
        for child in self.children:
            out += child.walk()
        return out


@dataclass
class Structure:
    root: Node
    warning_count: int


def _env_state(levels: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["property"]: item for item in levels}


class _Builder:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.registry = get_registry()
        self.env = _env_state(agent_env_levels(agent))
        self.seen: set[tuple[str, str]] = set()
        self.prompts = {
            p.name: p
            for p in Prompt.objects.select_related("model").prefetch_related(
                "tool_entries", "parts__include"
            )
        }
        self.agents = {
            a.name: a for a in Agent.objects.select_related("side_a_prompt", "side_b_prompt")
        }
        self.servers = {s.name: s for s in McpServer.objects.all()}

    # --- warnings about env values ---------------------------------------------------

    def env_warning(self, name: str, node: Node) -> None:
        state = self.env.get(name)
        if state is None:
            return
        levels = state["levels"]
        if state["missing"]:
            node.warnings.append(
                f"Env value {name} is not set (agent, prompt or instance), and it is required."
            )
        elif not any(levels.values()):
            node.notes.append(
                f"Env value {name} is set nowhere here: each user or thread must give it."
            )

    # --- nodes -------------------------------------------------------------------------

    def agent_node(self, agent: Agent, *, label: str = "Agent") -> Node:
        node = Node(
            "agent",
            agent.name,
            label,
            detail=agent.title or agent.description,
            ref=Ref("agent", agent.pk),
        )
        if ("agent", agent.name) in self.seen:
            node.repeat = True
            return node
        self.seen.add(("agent", agent.name))
        if agent.expose_as_tool:
            node.notes.append("Prompts may call it as a tool (a subagent).")
        if agent.max_session_turns:
            node.notes.append(f"A session ends after {agent.max_session_turns} turns.")
        sides: list[tuple[str, Prompt | None]] = [("a", agent.side_a_prompt)]
        if agent.type == Agent.Type.DUAL_AI or agent.side_a_human:
            sides.append(("b", agent.side_b_prompt))
        for side, prompt in sides:
            node.children.append(self.side_node(agent, side, prompt))
        node.children += self.hook_nodes(agent.hooks, "agent")
        node.children += self.parent_hook_nodes(agent)
        return node

    def side_node(self, agent: Agent, side: str, prompt: Prompt | None) -> Node:
        label = getattr(agent, f"side_{side}_label")
        node = Node("side", f"Side {side.upper()}", "Side", detail=label)
        handler = getattr(agent, f"side_{side}_handler")
        if handler:  # spec 0.2.0: code, not a model, takes this side's turns
            node.notes.append(f"The side handler {handler} answers each message it receives.")
            return node
        stops = []
        if getattr(agent, f"side_{side}_stop_on_response"):
            stops.append("a text answer")
        stop_tool = getattr(agent, f"side_{side}_stop_tool")
        end_tool = getattr(agent, f"side_{side}_end_session_tool")
        if stop_tool:
            stops.append(f"the tool {stop_tool}")
        max_steps = getattr(agent, f"side_{side}_max_steps")
        if max_steps:
            stops.append(f"{max_steps} steps")
        node.notes.append(
            "Its turn ends at " + (", or ".join(stops) if stops else "nothing set: add a stop")
        )
        max_turns = getattr(agent, f"side_{side}_max_turns")
        if max_turns:
            node.notes.append(f"It takes at most {max_turns} turns.")
        if end_tool:
            node.notes.append(f"The tool {end_tool} ends the session.")
        if prompt is None:
            node.warnings.append(f"Side {side.upper()} has no prompt.")
            return node
        offered = self.offered_names(prompt)
        for what, tool in (("stop tool", stop_tool), ("end session tool", end_tool)):
            if tool and tool not in offered:
                # The runtime still offers it (runtime.tools.toolset), but with no description
                # the model has little reason to call it.
                node.warnings.append(
                    f"The {what} {tool} is not among {prompt.name}'s tools: the model is "
                    "offered it with no description, as a tool that only stops. Add it to "
                    "the prompt's tools to say when to call it."
                )
        node.children.append(self.prompt_node(prompt, label="Prompt"))
        node.children += self.side_subagent_nodes(agent, side)
        return node

    def side_subagent_nodes(self, agent: Agent, side: str) -> list[Node]:
        """Spec 0.2.0 relationships of this side (``sideX.subagents``), each its agent."""
        out = []
        for relationship in getattr(agent, f"side_{side}_subagents") or []:
            name = str(relationship.get("agent", ""))
            target = self.agents.get(name)
            label = f"Subagent (side {side.upper()})"
            if target is None:
                node = Node("agent", name, label)
                node.warnings.append(f"No agent is called {name}.")
                out.append(node)
                continue
            node = self.agent_node(target, label=label)
            alias = relationship.get("as")
            said = relationship.get("description") or target.tool_description
            node.detail = f"as {alias}: {said}" if alias else said
            options = [k for k in ("blocking", "immediate", "hidden") if relationship.get(k)]
            if relationship.get("maxInstances"):
                options.append(f"at most {relationship['maxInstances']} at once")
            if options:
                node.notes.append("Relationship: " + ", ".join(options) + ".")
            out.append(node)
        return out

    def offered_names(self, prompt: Prompt) -> set[str]:
        return {t.name for t in prompt.tool_entries.all()}

    def prompt_node(self, prompt: Prompt, *, label: str) -> Node:
        node = Node("prompt", prompt.name, label, ref=Ref("prompt", prompt.pk))
        if ("prompt", prompt.name) in self.seen:
            node.repeat = True
            return node
        self.seen.add(("prompt", prompt.name))
        node.children.append(self.model_node(prompt.model))
        for part in prompt.parts.all():
            if part.type == PromptPart.Kind.INCLUDE:
                if part.include is None:
                    node.warnings.append("An include part names no prompt.")
                else:
                    node.children.append(self.prompt_node(part.include, label="Included prompt"))
            elif part.type == PromptPart.Kind.ENV:
                env = Node("env", part.env_key, "Env value in the text", ref=Ref("env"))
                self.env_warning(part.env_key, env)
                node.children.append(env)
        for entry in prompt.tool_entries.all():
            node.children.append(self.tool_node(entry))
        node.children += self.hook_nodes(prompt.hooks, "prompt")
        return node

    def model_node(self, model: LanguageModel) -> Node:
        node = Node(
            "model",
            model.name,
            "Model",
            detail=f"{model.get_provider_display()} · {model.model}",
            ref=Ref("model", model.pk),
        )
        key = KEY_NAMES.get(model.provider)
        if key:
            self.env_warning(key, node)
        return node

    def tool_node(self, entry: PromptTool) -> Node:
        name = entry.name
        node = self._tool(name, entry.prompt.model)
        if entry.optional:
            node.notes.append(f"Offered only when the env value {entry.optional} is true.")
        if entry.requires_approval:
            node.notes.append("Each call waits for a person's approval.")
        if entry.client:
            node.notes.append("The app talking to the agent runs each call (a client tool).")
        return node

    def _tool(self, name: str, model: Any = None) -> Node:
        if name.startswith(PROVIDER_TOOL_PREFIX):
            tool = name[len(PROVIDER_TOOL_PREFIX) :]
            offers = allowed_offers(model_definition(model)) if model is not None else {}
            offer = offers.get(tool)
            node = Node("tool", name, "Provider tool", detail=offer.description if offer else "")
            if offer is None:
                what = ", ".join(offers) or "none"
                node.warnings.append(
                    f"The model's provider does not run a tool called {tool} (it runs: {what})."
                )
            return node
        mcp = split_name(name)
        if mcp is not None or name.startswith("mcp:"):
            return self.mcp_node(name, mcp)
        code = self.registry.tools.get(name)
        if code is not None:
            node = Node(
                "tool",
                name,
                "Code tool",
                detail=code.description,
                ref=Ref("catalog", anchor="tools"),
            )
            if not code.description.strip():
                node.warnings.append(
                    "This tool has no description: the model is not told what it does."
                )
            for variable in code.variables:
                self.env_warning(variable.name, node)
            return node
        prompt = self.prompts.get(name)
        if prompt is not None:
            node = self.prompt_node(prompt, label="Sub-prompt (tool)")
            node.detail = prompt.tool_description
            if not node.repeat and not prompt.tool_description.strip():
                node.warnings.append(
                    "This prompt has no tool description: the model is not told when to call it."
                )
            return node
        agent = self.agents.get(name)
        if agent is not None:
            node = self.agent_node(agent, label="Subagent (tool)")
            node.detail = agent.tool_description or agent.description
            if not node.repeat and not (agent.tool_description or agent.description).strip():
                node.warnings.append(
                    "This agent has no tool description: the model is not told when to call it."
                )
            return node
        node = Node("tool", name, "Tool")
        node.warnings.append(f"Nothing is called {name}: no code tool, prompt or agent.")
        return node

    def mcp_node(self, name: str, parts: tuple[str, str] | None) -> Node:
        node = Node("tool", name, "MCP tool")
        if parts is None:
            node.warnings.append(f"{name} must be written mcp:<server>/<tool>.")
            return node
        server_name, tool_name = parts
        row = self.servers.get(server_name)
        if row is None:
            node.warnings.append(f"There is no MCP server called {server_name}.")
            return node
        node.ref = Ref("mcp_server", row.pk)
        if not row.enabled:
            node.warnings.append(f"The MCP server {server_name} is turned off.")
        tool = server_runtime(row).tool(tool_name)
        if tool is None:
            node.warnings.append(
                f"{server_name} does not offer {tool_name} (as of its last tool list)."
            )
            return node
        node.detail = tool.description or ""
        if not node.detail.strip():
            node.warnings.append(
                "This tool has no description: the model is not told what it does."
            )
        return node

    def hook_nodes(self, hooks: list[str] | None, owner: str) -> list[Node]:
        out = []
        for hook_id in hooks or []:
            hook = self.registry.hooks.get(hook_id)
            node = Node(
                "hook",
                hook_id,
                f"Hook ({owner})",
                detail=f"{hook.hook}: {hook.description}" if hook else "",
                ref=Ref("catalog", anchor="hooks"),
            )
            if hook is None:
                node.warnings.append(f"No hook called {hook_id} is defined in code.")
            out.append(node)
        return out

    def parent_hook_nodes(self, agent: Agent) -> list[Node]:
        """Spec 0.2.0 ``parentHooks``: hooks this agent requires on every agent that starts it."""
        out = []
        for requirement in agent.parent_hooks or []:
            hook_id = str(requirement.get("hook", ""))
            node = Node(
                "hook",
                hook_id,
                "Hook required on its parents",
                detail=parent_hook_words(requirement),
                ref=Ref("catalog", anchor="hooks"),
            )
            if hook_id not in self.registry.hooks:
                node.warnings.append(
                    f"No hook called {hook_id} is defined in code: every agent that starts "
                    "this one fails its step until it is."
                )
            out.append(node)
        return out

    def effect_nodes(self) -> list[Node]:
        names = (
            ScheduledEffect.objects.filter(thread__agent=self.agent)
            .values_list("name", flat=True)
            .distinct()
            .order_by("name")[:EFFECTS_SHOWN]
        )
        out = []
        for name in names:
            effect = self.registry.effects.get(name)
            node = Node(
                "effect",
                name,
                "Effect (scheduled in its threads)",
                detail=effect.description if effect else "",
                ref=Ref("catalog", anchor="effects"),
            )
            if effect is None:
                node.warnings.append(f"No effect called {name} is defined in code any more.")
            out.append(node)
        return out


def parent_hook_words(requirement: dict[str, Any]) -> str:
    """One ``parentHooks`` requirement in words: when it runs on the parent, and why."""
    when = (
        "before the parent's own hooks"
        if requirement.get("stage") == "before_parent"
        else "after the parent's own hooks"
    )
    return f"runs {when}: {requirement.get('reason', '')}"


def parent_hooks_in_words(requirements: list[dict[str, Any]] | None) -> str:
    """Every ``parentHooks`` requirement in words, one sentence each (the studio's agent page)."""
    if not requirements:
        return "None: agents that start this one run only their own hooks."
    return " ".join(f"{r.get('hook', '')} {parent_hook_words(r)}." for r in requirements)


def agent_structure(agent: Agent) -> Structure:
    """The tree of everything ``agent`` can reach, with what is missing on each node."""
    builder = _Builder(agent)
    root = builder.agent_node(agent)
    root.children += builder.effect_nodes()
    return Structure(root=root, warning_count=sum(len(n.warnings) for n in root.walk()))
