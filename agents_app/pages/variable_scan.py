"""Which env values an agent needs, and where each is defined (``GET /api/variables/agents/…``).

From the agent, through its side prompts, their includes and the prompts and agents
named in their tools (recursively, each once), it collects the env parts of prompts,
the provider keys of their models and the env values code tools declare
(``define_tool(..., variables=[...])``). Tool entries behind an ``optional`` gate are
left out, as the runtime leaves them out unless enabled. Each value is looked up in the order the runtime
resolves it: thread → agent → prompt → account → instance (the process environment
counts as instance for provider keys). Secret values are never returned.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agents_app.base.code_registry import get_registry
from agents_app.base.encryption import decrypt
from agents_app.base.errors import NotFound
from agents_app.models import Agent, EnvValue, Prompt, PromptPart, PromptTool, Thread
from runtime.core.spec import PromptVariable
from runtime.providers.registry import provider_env, provider_env_names
from runtime.tools.tool_env import VariableDefinition


@dataclass
class _Need:
    declared: list[dict[str, str]] = field(default_factory=list)
    secret: bool = False
    required: bool = False
    scoped: bool = False
    description: str = ""

    def add(self, kind: str, name: str) -> None:
        if {"type": kind, "name": name} not in self.declared:
            self.declared.append({"type": kind, "name": name})


def _walk(agent: Agent) -> tuple[dict[str, _Need], set[str], set[str]]:
    """Prompt env parts, provider keys and code tools' declarations reachable from ``agent``
    (side prompts, includes, sub-prompts, agents as tools, recursively; each visited once),
    with the prompts' own ``variables``."""
    start = [p for p in (agent.side_a_prompt, agent.side_b_prompt) if p is not None]
    return _walk_prompts(start, {agent.name})


def _walk_prompts(
    todo: list[Prompt], agents: set[str]
) -> tuple[dict[str, _Need], set[str], set[str]]:
    tools = get_registry().tools
    needs: dict[str, _Need] = {}
    prompts: set[str] = set()
    while todo:
        p = todo.pop()
        if p.name in prompts:
            continue
        prompts.add(p.name)
        for part in PromptPart.objects.filter(prompt=p).select_related("include__model"):
            if part.type == PromptPart.Kind.ENV and part.env_key:
                needs.setdefault(part.env_key, _Need(description="Prompt env part")).add(
                    "prompt", p.name
                )
            elif part.type == PromptPart.Kind.INCLUDE and part.include is not None:
                todo.append(part.include)
        _prompt_needs(needs, p)
        # The provider's key and config slots (a ``define_provider`` may read several).
        for env, secret, required, description in provider_env(p.model.provider):
            need = needs.setdefault(env, _Need(description=description))
            need.secret = need.secret or secret
            need.required = need.required or required
            need.add("model", p.model.name)
        # An entry behind an ``optional`` gate is absent unless its env enables it (as the runtime).
        entries = PromptTool.objects.filter(prompt=p, optional="").values_list("name", "env")
        names = [name for name, _ in entries]
        for name, given in entries:
            if name in tools:  # values the entry's own ``env`` gives are not needed elsewhere
                declared = [v for v in tools[name].variables if v.name not in (given or {})]
                _tool_needs(needs, name, declared)
        todo += list(Prompt.objects.filter(name__in=names).select_related("model"))
        children = Agent.objects.filter(name__in=names).exclude(name__in=agents)
        for child in children.select_related("side_a_prompt__model", "side_b_prompt__model"):
            agents.add(child.name)
            todo += [q for q in (child.side_a_prompt, child.side_b_prompt) if q is not None]
    return needs, agents, prompts


def _prompt_needs(needs: dict[str, _Need], prompt: Prompt) -> None:
    """The prompt's own ``variables`` (spec 0.2.0), declared as code tools declare theirs."""
    for raw in prompt.variables or []:
        v = PromptVariable.model_validate(raw)
        need = needs.setdefault(v.name, _Need(description=v.description))
        need.add("prompt", prompt.name)
        need.secret = need.secret or v.type == "secret"
        need.required = need.required or v.required
        need.scoped = need.scoped or v.scoped
        need.description = need.description or v.description


def _tool_needs(
    needs: dict[str, _Need], tool: str, variables: Iterable[VariableDefinition]
) -> None:
    for v in variables:
        need = needs.setdefault(v.name, _Need(description=v.description))
        need.add("tool", tool)
        need.secret = need.secret or v.type == "secret"
        need.required = need.required or v.required
        need.scoped = need.scoped or v.scoped
        need.description = need.description or v.description


def _definitions(
    keys: set[str], agents: set[str], prompts: set[str], user: Any, thread: Thread | None
) -> dict[str, list[EnvValue]]:
    rows = EnvValue.objects.filter(key__in=keys).select_related("agent", "prompt")
    found: dict[str, list[EnvValue]] = {}
    for row in rows:
        relevant = (
            (
                row.scope == EnvValue.Scope.THREAD
                and thread is not None
                and row.thread_id == thread.pk
            )
            or (row.scope == EnvValue.Scope.AGENT and row.agent and row.agent.name in agents)
            or (row.scope == EnvValue.Scope.PROMPT and row.prompt and row.prompt.name in prompts)
            or (row.scope == EnvValue.Scope.USER and row.user_id == getattr(user, "pk", None))
            or row.scope == EnvValue.Scope.INSTANCE
        )
        if relevant:
            found.setdefault(row.key, []).append(row)
    return found


_ORDER = ["thread", "agent", "prompt", "user", "instance"]


def _defined(row: EnvValue) -> dict[str, Any]:
    if row.scope == EnvValue.Scope.AGENT and row.agent is not None:
        return {"type": "agent", "name": row.agent.name}
    if row.scope == EnvValue.Scope.PROMPT and row.prompt is not None:
        return {"type": "prompt", "name": row.prompt.name}
    return {"type": "account" if row.scope == EnvValue.Scope.USER else str(row.scope)}


def agent_variables(name: str, user: Any, thread: Thread | None = None) -> list[dict[str, Any]]:
    agent = Agent.objects.select_related("side_a_prompt__model", "side_b_prompt__model").filter(
        name=name[:129]
    )
    row = agent.first()
    if row is None:
        raise NotFound(f"Agent not found: {name}")
    return _listed(*_walk(row), user, thread)


def prompt_variables(name: str, user: Any, thread: Thread | None = None) -> list[dict[str, Any]]:
    """The same scan from one prompt (``GET /api/variables/prompts/{name}``)."""
    row = Prompt.objects.select_related("model").filter(name=name[:129]).first()
    if row is None:
        raise NotFound(f"Prompt not found: {name}")
    return _listed(*_walk_prompts([row], set()), user, thread)


def tool_variables(name: str, user: Any, thread: Thread | None = None) -> list[dict[str, Any]]:
    """The values one code tool declares (``GET /api/variables/tools/{name}``)."""
    tool = get_registry().tools.get(name)
    if tool is None:
        raise NotFound(f"Tool not found: {name}")
    needs: dict[str, _Need] = {}
    _tool_needs(needs, name, tool.variables)
    return _listed(needs, set(), set(), user, thread)


def _listed(
    needs: dict[str, _Need],
    agents: set[str],
    prompts: set[str],
    user: Any,
    thread: Thread | None,
) -> list[dict[str, Any]]:
    found = _definitions(set(needs), agents, prompts, user, thread)
    out = []
    for prop in sorted(needs):
        need = needs[prop]
        rows = sorted(found.get(prop, []), key=lambda r: _ORDER.index(str(r.scope)))
        item: dict[str, Any] = {
            "property": prop,
            "declared": need.declared,
            "type": "secret" if need.secret else "text",
            "required": need.required,
            "scoped": need.scoped,
            "description": need.description,
        }
        if rows:
            item["defined"] = _defined(rows[0])
            if rows[0].value_type == EnvValue.Type.TEXT and not need.secret:
                item["value"] = decrypt(rows[0].ciphertext)
        elif prop in provider_env_names() and os.environ.get(prop):
            item["defined"] = {"type": "instance"}
        else:
            item["defined"] = False
        out.append(item)
    return out


_LEVELS = ("agent", "prompt", "instance")


def agent_env_levels(agent: Agent) -> list[dict[str, Any]]:
    """For the studio's agent page: each value the agent needs, who declares it, and whether
    it is set at the agent, prompt and instance levels (never the value itself). Thread and
    account values depend on who talks to the agent, so ``missing`` here means "unless each
    user or thread supplies it"."""
    needs, agents, prompts = _walk(agent)
    found = _definitions(set(needs), agents, prompts, None, None)
    out = []
    for prop in sorted(needs):
        need = needs[prop]
        levels = {str(row.scope) for row in found.get(prop, [])}
        if prop in provider_env_names() and os.environ.get(prop):
            levels.add("instance")  # provider keys may come from the process environment
        out.append(
            {
                "property": prop,
                "type": "secret" if need.secret else "text",
                "required": need.required,
                "declared": ", ".join(f"{d['type']} {d['name']}" for d in need.declared),
                "levels": {level: level in levels for level in _LEVELS},
                "missing": need.required and not levels & set(_LEVELS),
            }
        )
    return out
