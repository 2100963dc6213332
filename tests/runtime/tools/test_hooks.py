"""The twelve hooks: each one's effect observed, with the spec's signatures and return rules."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery
from runtime.tools.hooks import HookBlocked
from runtime.tools.registry import define_hook, define_tool
from tests.runtime.conftest import World, agent, prompt


@define_tool("Echo")
async def echo(state: Any) -> str:
    return "echo result"


@define_tool("Fails")
async def fails(state: Any) -> str:
    raise RuntimeError("bad things")


def _world(world: World, *hooks: Any, script: TestScript, on_agent: bool = False) -> None:
    world.register(*hooks, echo, fails)
    ids = [h.id for h in hooks]
    if on_agent:
        world.define(prompt(tools=["echo", "fails"]), agent(hooks=ids))
    else:
        world.define(prompt(tools=["echo", "fails"], hooks=ids), agent())
    world.script("m", script)


async def test_filter_messages_shapes_the_rows_the_request_is_built_from(world: World) -> None:
    async def last_only(state: Any, messages: list[Any]) -> list[Any]:
        return messages[-1:]

    _world(
        world,
        define_hook("filter_messages", last_only),
        script=TestScript().add_text("a").add_text("b"),
    )
    thread, _ = await world.chat("first")
    await world.run(thread.id, "second")
    assert world.requests()[1].messages == [{"role": "user", "content": "second"}]


async def test_prefilter_llm_history_rewrites_the_outgoing_messages(world: World) -> None:
    async def remind(state: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        messages[-1]["content"] += "\n\nRemember to be concise."
        return messages

    _world(world, define_hook("prefilter_llm_history", remind), script=TestScript().add_text("ok"))
    thread, _ = await world.chat("hello")
    assert world.requests()[0].messages[-1]["content"] == "hello\n\nRemember to be concise."
    stored = await world.messages(thread.id)
    assert stored[0].content == "hello"  # storage is untouched


async def test_prefilter_hook_can_block_before_any_spend(world: World) -> None:
    async def guard(state: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise HookBlocked("This request is not allowed.")

    _world(
        world, define_hook("prefilter_llm_history", guard), script=TestScript().add_text("unused")
    )
    thread, result = await world.chat("something forbidden")
    assert result.stop_reason == "hook_blocked"
    assert world.requests() == []
    last = (await world.messages(thread.id))[-1]
    assert (last.role, last.content) == ("assistant", "This request is not allowed.")


async def test_after_system_message_replaces_the_system_prompt(world: World) -> None:
    async def shout(state: Any, text: str) -> str:
        return text.upper()

    async def keep(state: Any, text: str) -> None:
        return None

    hooks = (define_hook("after_system_message", shout), define_hook("after_system_message", keep))
    _world(world, *hooks, script=TestScript().add_text("ok"))
    await world.chat("hi")
    assert world.requests()[0].system == "YOU ARE HELPFUL."


async def test_before_create_message_transforms_rows_before_storage(world: World) -> None:
    async def tag(state: Any, message: dict[str, Any]) -> dict[str, Any]:
        return {**message, "metadata": {**message["metadata"], "tagged": True}}

    _world(
        world,
        define_hook("before_create_message", tag),
        script=TestScript().add_tool_call("echo").add_text("ok"),
    )
    thread, _ = await world.chat("hi")
    rows = await world.messages(thread.id)
    assert all(m.metadata.get("tagged") for m in rows)


async def test_after_create_message_sees_every_insert(world: World) -> None:
    created: list[tuple[str, str | None]] = []

    async def record(state: Any, message: dict[str, Any]) -> None:
        created.append((message["role"], message["status"]))

    _world(
        world,
        define_hook("after_create_message", record),
        script=TestScript().add_tool_call("echo").add_text("ok"),
    )
    await world.chat("hi")
    assert created == [
        ("user", "completed"),
        ("assistant", "pending"),
        ("tool", "completed"),
        ("assistant", "pending"),
    ]


async def test_before_update_message_changes_the_update(world: World) -> None:
    seen: list[str] = []

    async def redact(state: Any, message_id: str, updates: dict[str, Any]) -> dict[str, Any]:
        seen.append(message_id)
        if updates.get("content"):
            updates["content"] = updates["content"].replace("secret", "[redacted]")
        return updates

    _world(
        world,
        define_hook("before_update_message", redact),
        script=TestScript().add_text("the secret is 42"),
    )
    thread, result = await world.chat("hi")
    reply = (await world.messages(thread.id))[-1]
    assert reply.content == "the [redacted] is 42" and seen == [reply.id]
    assert result.final_text == "the [redacted] is 42"


async def test_after_update_message_receives_the_updated_message(world: World) -> None:
    updated: list[tuple[str | None, str | None]] = []

    async def record(state: Any, message: Any) -> None:
        updated.append((message.status, message.content))

    _world(world, define_hook("after_update_message", record), script=TestScript().add_text("done"))
    await world.chat("hi")
    assert updated == [("completed", "done")]


async def test_before_store_tool_result_rewrites_the_stored_result(world: World) -> None:
    async def sanitize(
        state: Any, tool_call: dict[str, Any], result: dict[str, Any]
    ) -> dict[str, Any]:
        assert tool_call["function"]["name"] == "echo"
        return {**result, "result": result["result"].replace("echo", "ECHO")}

    _world(
        world,
        define_hook("before_store_tool_result", sanitize),
        script=TestScript().add_tool_call("echo").add_text("ok"),
    )
    thread, _ = await world.chat("hi")
    row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert row.content == "ECHO result"


async def test_after_tool_call_success_can_replace_the_result(world: World) -> None:
    from runtime.core.results import success

    async def wrap(state: Any, tool_call: dict[str, Any], result: Any) -> Any:
        return success(f"[{result.result}]")

    _world(
        world,
        define_hook("after_tool_call_success", wrap),
        script=TestScript().add_tool_call("echo").add_text("ok"),
    )
    thread, _ = await world.chat("hi")
    assert (
        next(m for m in await world.messages(thread.id) if m.role == "tool").content
        == "[echo result]"
    )


async def test_after_tool_call_success_returning_none_keeps_the_result(world: World) -> None:
    async def observe(state: Any, tool_call: dict[str, Any], result: Any) -> None:
        return None

    _world(
        world,
        define_hook("after_tool_call_success", observe),
        script=TestScript().add_tool_call("echo").add_text("ok"),
    )
    thread, _ = await world.chat("hi")
    assert (
        next(m for m in await world.messages(thread.id) if m.role == "tool").content
        == "echo result"
    )


async def test_after_tool_call_failure_can_recover(world: World) -> None:
    calls: list[str] = []

    async def recover(state: Any, tool_call: dict[str, Any], result: Any) -> dict[str, str]:
        calls.append(result.error)
        return {"status": "success", "result": "recovered"}

    async def never(state: Any, tool_call: dict[str, Any], result: Any) -> None:
        raise AssertionError("success hook must not run for a failure")

    hooks = (
        define_hook("after_tool_call_failure", recover),
        define_hook("after_tool_call_success", never),
    )
    _world(world, *hooks, script=TestScript().add_tool_call("fails").add_text("ok"))
    thread, _ = await world.chat("hi")
    row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert (row.tool_status, row.content, calls) == ("success", "recovered", ["bad things"])


async def test_after_thread_created_runs_when_a_thread_is_created(world: World) -> None:
    async def init(state: Any) -> None:
        await state.set_value("initialized", True)

    _world(world, define_hook("after_thread_created", init), script=TestScript())
    thread = await world.thread()
    assert await world.store.get_value(thread.id, "initialized") is True


async def test_hooks_come_from_the_agent_when_the_prompt_lists_none(world: World) -> None:
    async def shout(state: Any, text: str) -> str:
        return "AGENT HOOK RAN"

    _world(
        world,
        define_hook("after_system_message", shout),
        script=TestScript().add_text("ok"),
        on_agent=True,
    )
    await world.chat("hi")
    assert world.requests()[0].system == "AGENT HOOK RAN"


async def test_a_failing_hook_is_logged_and_the_session_goes_on(world: World) -> None:
    async def broken(state: Any, text: str) -> str:
        raise ValueError("hook bug")

    _world(world, define_hook("after_system_message", broken), script=TestScript().add_text("fine"))
    thread, result = await world.chat("hi")
    assert result.final_text == "fine" and world.requests()[0].system == "You are helpful."
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="system"))
    assert [(log.error_type, log.tool_name) for log in logs] == [("hook_error", "broken")]
    assert "hook bug" in logs[0].error


async def test_hooks_receive_thread_state_with_execution(world: World) -> None:
    seen: list[Any] = []

    async def look(state: Any, text: str) -> None:
        seen.append((state.thread_id, state.execution.current_side, state.execution.step_count))

    _world(world, define_hook("after_system_message", look), script=TestScript().add_text("ok"))
    thread, _ = await world.chat("hi")
    assert seen == [(thread.id, "a", 0)]


@pytest.mark.parametrize("form", ["tuple", "dict", "keywords", "decorator"])
def test_define_hook_accepts_the_spec_forms(form: str) -> None:
    async def keep_recent(state: Any, messages: list[Any]) -> list[Any]:
        return messages[-10:]

    if form == "tuple":
        hook = define_hook("filter_messages", keep_recent)
    elif form == "dict":
        hook = define_hook({"hook": "filter_messages", "id": "keep_recent", "execute": keep_recent})
    elif form == "keywords":
        hook = define_hook(hook="filter_messages", id="keep_recent", execute=keep_recent)
    else:
        hook = define_hook("filter_messages")(keep_recent)
    assert (hook.id, hook.hook, hook.fn) == ("keep_recent", "filter_messages", keep_recent)
