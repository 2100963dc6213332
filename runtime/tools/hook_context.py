"""The hook execution context (spec 0.2.0 ``HookExecutionContext``): why a hook runs.

A hook that declares one more positional parameter than its hook's arguments gets it
last: ``{"source": {"kind": "prompt", "promptName": …}}`` when the active prompt's
``hooks`` list named it, ``{"kind": "agent", "agentName": …}`` when the agent's list
did (the prompt lists none), ``{"kind": "child", "relationshipName": …, "agentName":
…}`` when a child agent's ``parentHooks`` contributed it. Hooks written before 0.2.0,
with fewer parameters, are called as before: the signature decides, not a setting.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal, NotRequired, TypedDict

SourceKind = Literal["prompt", "agent", "child"]

# Positional arguments each hook receives, ``state`` included (the context comes after them).
HOOK_ARITY: dict[str, int] = {
    "filter_messages": 2,
    "prefilter_llm_history": 2,
    "after_system_message": 2,
    "before_create_message": 2,
    "after_create_message": 2,
    "before_update_message": 3,
    "after_update_message": 2,
    "before_store_tool_result": 3,
    "after_tool_call_success": 3,
    "after_tool_call_failure": 3,
    "after_thread_created": 1,
    "after_subagent_created": 2,
    "tool_call_started": 3,
    "tool_call_done": 3,
}


class HookSource(TypedDict):
    """Where the hook's id was listed (the spec's camelCase keys)."""

    kind: SourceKind
    promptName: NotRequired[str]
    agentName: NotRequired[str]
    relationshipName: NotRequired[str]


class HookExecutionContext(TypedDict):
    """The trailing argument of a hook that declares it."""

    source: HookSource


class HookIds(list[str]):
    """Hook ids and the list they came from (``kind``): what ``HookRunner`` builds the
    context's source from. A plain list of ids counts as the prompt's."""

    def __init__(self, ids: list[str], kind: SourceKind = "prompt") -> None:
        super().__init__(ids)
        self.kind: SourceKind = kind


def context_for(kind: SourceKind, prompt_name: str, agent_name: str) -> HookExecutionContext:
    """The context of a hook listed by a prompt or an agent."""
    if kind == "agent":
        return {"source": {"kind": "agent", "agentName": agent_name}}
    return {"source": {"kind": "prompt", "promptName": prompt_name}}


def child_context(relationship: str, agent_name: str) -> HookExecutionContext:
    """The context of a hook a child agent's ``parentHooks`` contributed."""
    return {"source": {"kind": "child", "relationshipName": relationship, "agentName": agent_name}}


@lru_cache(maxsize=512)
def takes_context(fn: Callable[..., Any], hook: str) -> bool:
    """Whether ``fn`` declares a positional parameter after its hook's arguments (``*args``
    does not count: a hook written as ``(state, *args)`` keeps receiving what it did)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) > HOOK_ARITY.get(hook, 0)
