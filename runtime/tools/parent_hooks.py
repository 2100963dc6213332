"""Spec 0.2.0 ``parentHooks`` at run time (row A7): the hooks child agents require on a parent.

A parent side's relationships are its 0.2.0 ``subagents[]`` and, in 0.1.0, the active
prompt's tool entries naming an agent. For each child (in that order, an ``optional`` one
only while its env value is truthy), every ``parentHooks`` requirement becomes a
``RequiredHook``: ``HookRunner`` runs the ``before_parent`` ones before the prompt's (or
agent's) own hooks and the others (the default, ``after_parent``) after them, on the
parent's ``ThreadState``, with ``{source: {kind: "child", …}}`` as their context.

It fails closed, as the reference's ``ParentHookResolver`` does: a required hook that is no
longer registered (its code removed after the child was saved) raises
``ParentHookMissing``, which fails the parent's step with that sentence rather than
running the parent without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from runtime.core.spec import PromptDefinition, SideConfig
from runtime.core.user_scope import USER_HOOK_NAMES
from runtime.definitions.loader import DefinitionLoader, DefinitionNotFound
from runtime.tools.hook_context import HookExecutionContext, child_context
from runtime.tools.registry import Registry

Stage = Literal["before_parent", "after_parent"]
EnvLookup = Callable[[str], Awaitable[str | None]]
_TRUTHY = ("true", "1", "yes")


class ParentHookMissing(DefinitionNotFound):
    """A child's required parent hook is not registered: the parent may not run without it
    (a broken definition, so the session's step ends as ``step_error`` with this sentence)."""


@dataclass(frozen=True)
class RequiredHook:
    """One hook a child agent requires on this parent, and the context it receives."""

    hook_id: str
    stage: Stage
    context: HookExecutionContext


async def required_hooks(
    defs: DefinitionLoader,
    registry: Registry,
    prompt: PromptDefinition,
    side: SideConfig | None,
    env: EnvLookup,
) -> list[RequiredHook]:
    """The hooks the children of ``side`` (running ``prompt``) require, in declaration order;
    ``ParentHookMissing`` when one of them is not registered."""
    out: list[RequiredHook] = []
    seen: set[tuple[str, str]] = set()
    for relationship, agent_name in await _relationships(defs, registry, prompt, side, env):
        child = await defs.find_agent(agent_name)
        if child is None:
            continue  # the tool and relationship checks report a missing agent
        for requirement in child.parent_hooks or []:
            # A child declared twice (a side relationship and a tool entry) runs each once.
            if (child.name, requirement.hook) in seen:
                continue
            seen.add((child.name, requirement.hook))
            if requirement.hook not in registry.hooks:
                raise ParentHookMissing(
                    f"The agent '{child.name}' requires the hook '{requirement.hook}' on the "
                    f"agents that start it (parentHooks: {requirement.reason}), and no hook with "
                    "that id is registered any more; restore the hook's code or remove the "
                    "requirement."
                )
            if registry.hooks[requirement.hook].hook in USER_HOOK_NAMES:
                raise ParentHookMissing(
                    f"The agent '{child.name}' requires the hook '{requirement.hook}' on the "
                    "agents that start it, and that hook is now a user hook (it runs in a "
                    "person's scope, never on a parent thread); remove the requirement."
                )
            out.append(
                RequiredHook(
                    requirement.hook,
                    requirement.stage or "after_parent",
                    child_context(relationship, child.name),
                )
            )
    return out


async def _relationships(
    defs: DefinitionLoader,
    registry: Registry,
    prompt: PromptDefinition,
    side: SideConfig | None,
    env: EnvLookup,
) -> list[tuple[str, str]]:
    """``(relationship name, child agent)`` pairs declared on this side: its 0.2.0
    relationships, then the prompt's tool entries that name an agent (0.1.0)."""
    pairs: list[tuple[str, str]] = []
    for relationship in side.subagents or [] if side is not None else []:
        if await _enabled(relationship.optional, env):
            pairs.append((relationship.name, relationship.agent))
    for entry in prompt.tools or []:
        name = entry if isinstance(entry, str) else entry.name
        optional = None if isinstance(entry, str) else entry.optional
        # A name is a native tool first, then a prompt, then an agent (runtime.tools.toolset).
        if name in registry.tools or await defs.find_prompt(name) is not None:
            continue
        if await _enabled(optional, env) and await defs.find_agent(name) is not None:
            pairs.append((name, name))
    return pairs


async def _enabled(optional: str | None, env: EnvLookup) -> bool:
    return not optional or (await env(optional) or "").strip().lower() in _TRUTHY
