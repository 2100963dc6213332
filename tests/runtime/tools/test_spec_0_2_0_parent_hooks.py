"""Issue #54, row A7 (spec 0.2.0 ``parentHooks``) and D3's ``source: child``, in the engine.

A child agent's required hooks run on each direct parent side that declares it (a 0.2.0 side
relationship, or a 0.1.0 prompt tool entry naming it), on the parent's ThreadState, in the
order child ``before_parent``, the prompt's (or agent's) own hooks, child ``after_parent``;
a required hook gone from code fails the parent's step. Observed at the edge: what each
hook received, and the parent's stored reply.

Collected again over ``DjangoStore`` by tests/agents_app/bridge/engine_on_django.
"""

from __future__ import annotations

from typing import Any

from runtime.core.spec import AgentDefinition
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_hook
from tests.runtime.conftest import World, agent, prompt

calls: list[tuple[str, str, Any]] = []


def _recorder(hook_id: str) -> Any:
    async def record(state: Any, text: str, context: Any) -> None:
        calls.append((hook_id, state.thread_id, context))

    return define_hook({"hook": "after_system_message", "id": hook_id, "execute": record})


def _child(parent_hooks: list[dict[str, Any]]) -> AgentDefinition:
    return AgentDefinition.model_validate(
        {
            "name": "helper",
            "exposeAsTool": True,
            "toolDescription": "Looks things up",
            "sideA": {"prompt": "helper_prompt"},
            "sideB": {"human": True},
            "parentHooks": parent_hooks,
        }
    )


def _world(world: World, parent: AgentDefinition, parent_hooks: list[dict[str, Any]]) -> None:
    calls.clear()
    world.register(_recorder("audit_first"), _recorder("own"), _recorder("audit_last"))
    world.define(
        prompt("main", hooks=["own"]),
        prompt("entry_prompt", tools=["helper"]),  # no hooks of its own: the agent's
        prompt("helper_prompt", model="mc"),
        parent,
        _child(parent_hooks),
        agent("plain", "main"),
    )
    world.script("m", TestScript().add_text("parent answers").add_text("plain answers"))
    world.script("mc", TestScript().add_text("child answers"))


REQUIRED = [
    {"hook": "audit_last", "reason": "Keeps the audit trail"},  # stage unset: after_parent
    {"hook": "audit_first", "reason": "Redacts first", "stage": "before_parent"},
]


def _side_parent() -> AgentDefinition:
    return AgentDefinition.model_validate(
        {
            "name": "agent",
            "sideA": {"prompt": "main", "subagents": [{"agent": "helper", "as": "researcher"}]},
            "sideB": {"human": True},
        }
    )


async def test_A7_child_hooks_run_on_the_parent_side_around_its_own_hooks_with_source_child(
    world: World,
) -> None:
    _world(world, _side_parent(), REQUIRED)

    thread, result = await world.chat("go")

    assert result.final_text == "parent answers"
    child = {"source": {"kind": "child", "relationshipName": "researcher", "agentName": "helper"}}
    assert calls == [
        ("audit_first", thread.id, child),
        ("own", thread.id, {"source": {"kind": "prompt", "promptName": "main"}}),
        ("audit_last", thread.id, child),
    ]
    # The same prompt on an agent that declares no relationship runs only its own hooks.
    calls.clear()
    plain, _ = await world.chat("go", agent_name="plain")
    assert calls == [("own", plain.id, {"source": {"kind": "prompt", "promptName": "main"}})]


async def test_A7_a_0_1_0_prompt_tool_entry_naming_the_child_brings_its_hooks(
    world: World,
) -> None:
    _world(world, agent("agent", "entry_prompt"), REQUIRED)

    thread, result = await world.chat("go")

    assert result.final_text == "parent answers"
    child = {"source": {"kind": "child", "relationshipName": "helper", "agentName": "helper"}}
    assert calls == [("audit_first", thread.id, child), ("audit_last", thread.id, child)]


async def test_A7_a_required_hook_gone_from_code_fails_the_parent_step_with_a_sentence(
    world: World,
) -> None:
    _world(world, _side_parent(), [{"hook": "removed_later", "reason": "Audits"}])

    thread, result = await world.chat("go")

    assert result.stop_reason == "step_error"
    assert (
        "The agent 'helper' requires the hook 'removed_later' on the agents that start it "
        "(parentHooks: Audits), and no hook with that id is registered any more"
    ) in (result.detail or "")
    assert world.requests() == []  # fails closed: the parent's model was never asked
    assert calls == []
    stored = [(m.role, m.content) for m in await world.messages(thread.id)]
    assert stored[0] == ("user", "go")  # the person's message is kept
