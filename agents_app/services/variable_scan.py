"""Which env values an agent needs, and where each is defined (``GET /api/variables/agents/…``).

A minimal scan (the reference also walks tool-declared variables, optional gates and
scoped subagent values): from the agent, through its side prompts, their includes and
the prompts and agents named in their tools, it collects the env parts of prompts and
the provider keys of their models. Each value is looked up in the order the runtime
resolves it: thread → agent → prompt → account → instance (the process environment
counts as instance for provider keys). Secret values are never returned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from agents_app.encryption import decrypt
from agents_app.errors import NotFound
from agents_app.models import Agent, EnvValue, Prompt, PromptPart, PromptTool, Thread
from runtime.providers.registry import KEY_NAMES


@dataclass
class _Need:
    declared: list[dict[str, str]] = field(default_factory=list)
    secret: bool = False
    description: str = ""


def _walk(agent: Agent) -> tuple[dict[str, _Need], set[str], set[str]]:
    needs: dict[str, _Need] = {}
    agents, prompts = {agent.name}, set()
    todo_prompts = [p for p in (agent.side_a_prompt, agent.side_b_prompt) if p is not None]
    todo_agents: list[Agent] = []
    while todo_prompts or todo_agents:
        while todo_agents:
            a = todo_agents.pop()
            todo_prompts += [p for p in (a.side_a_prompt, a.side_b_prompt) if p is not None]
        p = todo_prompts.pop()
        if p.name in prompts:
            continue
        prompts.add(p.name)
        for part in PromptPart.objects.filter(prompt=p).select_related("include"):
            if part.type == PromptPart.Kind.ENV and part.env_key:
                need = needs.setdefault(part.env_key, _Need(description="Prompt env part"))
                need.declared.append({"type": "prompt", "name": p.name})
            elif part.type == PromptPart.Kind.INCLUDE and part.include is not None:
                todo_prompts.append(part.include)
        key = KEY_NAMES.get(p.model.provider)
        if key:
            need = needs.setdefault(key, _Need(secret=True, description="Provider API key"))
            need.secret = True
            need.declared.append({"type": "model", "name": p.model.name})
        names = list(PromptTool.objects.filter(prompt=p).values_list("name", flat=True))
        todo_prompts += list(Prompt.objects.filter(name__in=names).select_related("model"))
        for child in Agent.objects.filter(name__in=names).exclude(name__in=agents):
            agents.add(child.name)
            todo_agents.append(child)
    return needs, agents, prompts


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
    needs, agents, prompts = _walk(row)
    found = _definitions(set(needs), agents, prompts, user, thread)
    out = []
    for prop in sorted(needs):
        need = needs[prop]
        rows = sorted(found.get(prop, []), key=lambda r: _ORDER.index(str(r.scope)))
        item: dict[str, Any] = {
            "property": prop,
            "declared": need.declared,
            "type": "secret" if need.secret else "text",
            "required": need.secret,
            "scoped": False,
            "description": need.description,
        }
        if rows:
            item["defined"] = _defined(rows[0])
            if rows[0].value_type == EnvValue.Type.TEXT and not need.secret:
                item["value"] = decrypt(rows[0].ciphertext)
        elif need.secret and os.environ.get(prop):
            item["defined"] = {"type": "instance"}
        else:
            item["defined"] = False
        out.append(item)
    return out
