"""Effects in the engine: ``schedule_effect``, ``get_scheduled_effects``,
``remove_scheduled_effect`` and ``run_effect``, over the store under test.

(Claims, retries and recovery belong to the host: tests/agents_app/test_effects_*.py.)
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.effects import (
    EffectArgsInvalid,
    EffectNotFound,
    effect_run_data,
    is_permanent,
    retry_delay_ms,
    run_effect,
)
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import EffectRun
from runtime.tools.registry import define_effect, define_tool
from tests.runtime.conftest import World, agent, prompt


class RemindArgs(BaseModel):
    text: str
    times: int = 1


seen: list[dict[str, Any]] = []


async def remind(state: Any, args: RemindArgs) -> None:
    seen.append(
        {"args": args, "execution": state.execution, "effect_id": state.context["effect_id"]}
    )
    await state.inject_message("assistant", f"Reminder: {args.text}")


async def ping(state: Any) -> None:  # an effect without arguments
    seen.append({"ping": state.context["effect_id"]})


async def echo(state: Any, args: Any) -> None:  # no schema: the JSON as scheduled
    seen.append({"echo": args})


async def boom(state: Any, args: Any) -> None:
    raise RuntimeError("boom")


async def chain(state: Any, args: Any) -> None:
    seen.append({"chained": await state.schedule_effect("ping", None, 60_000)})


@pytest.fixture
async def state(world: World) -> Any:
    seen.clear()
    world.register(
        define_effect("Post a reminder", RemindArgs, remind),
        define_effect("Ping", ping),
        define_effect("Echo", None, echo),
        define_effect("Fails", None, boom),
        define_effect("Schedules another", None, chain),
    )
    world.define(prompt(), agent())
    thread = await world.thread()
    return await world.engine.thread_state(thread.id)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def test_scheduled_effects_are_listed_by_due_time_with_their_arguments(state: Any) -> None:
    before = _now_ms()
    later = await state.schedule_effect("remind", {"text": "later"}, delay_ms=60_000)
    soon = await state.schedule_effect("remind", {"text": "soon", "times": 2}, delay_ms=1_000)
    now = await state.schedule_effect("ping")
    runs = await state.get_scheduled_effects()
    assert [r.id for r in runs] == [now, soon, later]
    assert [r.args for r in runs] == [None, {"text": "soon", "times": 2}, {"text": "later"}]
    assert all(r.status == "pending" and r.attempts == 0 for r in runs)
    assert before + 1_000 <= runs[1].scheduled_at <= _now_ms() + 1_000
    assert before <= runs[0].created_at <= _now_ms() + 1
    assert [r.id for r in await state.get_scheduled_effects("remind")] == [soon, later]
    assert await state.get_scheduled_effects("nothing") == []


async def test_arguments_are_preserved_exactly(state: Any) -> None:
    args = {
        "nested": {"list": [1, 2.5, None, True, "x"], "empty": {}},
        "unicode": "héllo ✓ 𝄞",
        "big": 2**53 + 1,
        "neg": -0.125,
    }
    effect_id = await state.schedule_effect("echo", args)
    [run] = await state.get_scheduled_effects("echo")
    assert (run.id, run.args) == (effect_id, args)
    assert await state.schedule_effect("echo", [1, "two"]) and await state.schedule_effect("echo")


async def test_a_pydantic_model_is_stored_as_its_json(state: Any) -> None:
    await state.schedule_effect("remind", RemindArgs(text="hi"))
    [run] = await state.get_scheduled_effects()
    assert run.args == {"text": "hi", "times": 1}


async def test_an_unknown_effect_is_a_clear_error_and_nothing_is_stored(state: Any) -> None:
    with pytest.raises(EffectNotFound, match="^Effect not found: ghost$"):
        await state.schedule_effect("ghost", {})
    assert await state.get_scheduled_effects() == []


@pytest.mark.parametrize(
    "args",
    [{"times": 1}, {"text": 5}, "not an object", {"text": "x", "when": {1, 2}}],
    ids=["missing", "wrong-type", "not-object", "not-json"],
)
async def test_invalid_arguments_are_refused_and_nothing_is_stored(state: Any, args: Any) -> None:
    with pytest.raises(EffectArgsInvalid, match="^Effect remind args"):
        await state.schedule_effect("remind", args)
    assert await state.get_scheduled_effects() == []


async def test_a_negative_delay_is_refused(state: Any) -> None:
    with pytest.raises(ValueError, match="delay_ms"):
        await state.schedule_effect("ping", None, -1)


async def test_remove_cancels_only_pending_runs(state: Any, world: World) -> None:
    keep = await state.schedule_effect("remind", {"text": "keep"}, 60_000)
    drop = await state.schedule_effect("remind", {"text": "drop"}, 60_000)
    assert await state.remove_scheduled_effect(drop) is True
    assert [r.id for r in await state.get_scheduled_effects()] == [keep]
    assert await state.remove_scheduled_effect(drop) is False  # already canceled
    assert await state.remove_scheduled_effect(str(uuid.uuid4())) is False
    assert await state.remove_scheduled_effect("not-an-id") is False


async def test_other_threads_cannot_cancel_or_see_a_run(state: Any, world: World) -> None:
    effect_id = await state.schedule_effect("ping", None, 60_000)
    other = await world.engine.thread_state((await world.thread()).id)
    assert await other.get_scheduled_effects() == []
    assert await other.remove_scheduled_effect(effect_id) is False
    assert [r.id for r in await state.get_scheduled_effects()] == [effect_id]


async def test_schedule_and_cancel_are_announced_without_args(state: Any, world: World) -> None:
    effect_id = await state.schedule_effect("remind", {"text": "secret-ish"}, 60_000)
    await state.remove_scheduled_effect(effect_id)
    frames = world.sink.events(state.thread_id, "effect_changed")
    assert [(f["data"]["id"], f["data"]["status"]) for f in frames] == [
        (effect_id, "pending"),
        (effect_id, "agent_canceled"),
    ]
    assert "args" not in frames[0]["data"] and frames[1]["data"]["completedAt"] is not None
    assert set(frames[0]["data"]) == {
        "id",
        "name",
        "scheduledAt",
        "createdAt",
        "status",
        "attempts",
        "error",
        "completedAt",
        "manualRun",
        "manualRunAt",
        "replayedFrom",
    }


async def test_scheduling_the_same_id_twice_keeps_the_first(state: Any, world: World) -> None:
    run = EffectRun(id=str(uuid.uuid4()), thread_id=state.thread_id, name="echo", args=[1])
    stored, created = await world.store.schedule_effect(run)
    again, created_again = await world.store.schedule_effect(
        EffectRun(id=run.id, thread_id=state.thread_id, name="echo", args=[2])
    )
    assert (created, created_again) == (True, False)
    assert again.args == [1] and again.created_at == stored.created_at
    assert len(await state.get_scheduled_effects()) == 1


async def test_a_tool_call_schedules_ids_derived_from_its_call_id(world: World) -> None:
    world.register(define_effect("Ping", ping))

    @define_tool("Schedule two pings")
    async def plan(state: Any) -> str:
        first = await state.schedule_effect("ping", None, 60_000)
        second = await state.schedule_effect("ping", None, 60_000)
        return f"{first} {second}"

    world.register(plan)
    world.define(prompt(tools=["plan"]), agent())
    world.script("m", TestScript().add_tool_call("plan").add_text("done"))
    thread, _ = await world.chat("plan it")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    call_id = tool_row.tool_call_id
    namespace = uuid.UUID("0b6f6f0e-3c43-4e55-9a3c-5b1f4f7a2c11")
    expected = [str(uuid.uuid5(namespace, f"{thread.id}/{call_id}/{n}")) for n in (1, 2)]
    assert tool_row.content == " ".join(expected)
    state = await world.engine.thread_state(thread.id)
    assert [r.id for r in await state.get_scheduled_effects()] == expected


# --- running a run --------------------------------------------------------------------------


async def _pending(state: Any, name: str) -> EffectRun:
    [run] = await state.get_scheduled_effects(name)
    return run


async def test_run_effect_calls_the_handler_at_rest_with_typed_args(
    state: Any, world: World
) -> None:
    effect_id = await state.schedule_effect("remind", {"text": "stand up", "times": 3})
    await run_effect(world.engine, await _pending(state, "remind"))
    [call] = seen
    assert call["args"] == RemindArgs(text="stand up", times=3)
    assert call["execution"] is None and call["effect_id"] == effect_id
    [message] = (await state.get_messages()).messages
    assert message.content == "Reminder: stand up"
    assert message.metadata["scheduledEffect"] == {"id": effect_id, "name": "remind"}


async def test_handlers_without_schema_or_without_args(state: Any, world: World) -> None:
    ping_id = await state.schedule_effect("ping")
    await state.schedule_effect("echo", {"a": [1, {"b": None}]})
    await run_effect(world.engine, await _pending(state, "ping"))
    await run_effect(world.engine, await _pending(state, "echo"))
    assert seen == [{"ping": ping_id}, {"echo": {"a": [1, {"b": None}]}}]


async def test_run_time_errors_say_whether_a_retry_can_help(state: Any, world: World) -> None:
    await state.schedule_effect("boom")
    with pytest.raises(RuntimeError, match="boom") as failed:
        await run_effect(world.engine, await _pending(state, "boom"))
    assert not is_permanent(failed.value)
    ghost = EffectRun(id=str(uuid.uuid4()), thread_id=state.thread_id, name="ghost")
    with pytest.raises(EffectNotFound) as missing:
        await run_effect(world.engine, ghost)
    assert is_permanent(missing.value)
    stale = EffectRun(
        id=str(uuid.uuid4()), thread_id=state.thread_id, name="remind", args={"text": 1}
    )
    with pytest.raises(EffectArgsInvalid, match="^Effect remind args validation failed: text"):
        await run_effect(world.engine, stale)


async def test_a_handler_run_twice_schedules_the_same_follow_up_once(
    state: Any, world: World
) -> None:
    await state.schedule_effect("chain")
    run = await _pending(state, "chain")
    await run_effect(world.engine, run)
    await run_effect(world.engine, run)  # e.g. its worker died before recording the outcome
    first, second = seen
    assert first["chained"] == second["chained"]
    follow_ups = await state.get_scheduled_effects("ping")
    assert [r.id for r in follow_ups] == [first["chained"]]


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [retry_delay_ms(n, 1000, 5000) for n in (1, 2, 3, 4, 5)] == [
        1000,
        2000,
        4000,
        5000,
        5000,
    ]


def test_the_wire_shape_is_the_reference_effect_run() -> None:
    run = EffectRun(id="e", thread_id="t", name="n", args={"a": 1}, scheduled_at=5, created_at=4)
    assert effect_run_data(run) == {
        "id": "e",
        "name": "n",
        "args": {"a": 1},
        "scheduledAt": 5,
        "createdAt": 4,
        "status": "pending",
        "attempts": 0,
        "error": None,
        "completedAt": None,
        "manualRun": False,
        "manualRunAt": None,
        "replayedFrom": None,
    }


async def test_memory_store_keeps_canceled_runs_in_history(state: Any, world: World) -> None:
    from runtime.store.memory import MemoryStore

    assert isinstance(world.store, MemoryStore)
    effect_id = await state.schedule_effect("ping", None, 60_000)
    await state.remove_scheduled_effect(effect_id)
    assert world.store.effects[effect_id].status == "agent_canceled"
