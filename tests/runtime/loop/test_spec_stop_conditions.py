"""agents-spec §5 (stop conditions) and §6 (session turns), with the reference's priority order."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.spec import AgentDefinition
from runtime.deps import MAX_SESSION_TURNS, MAX_TOTAL_STEPS, Limits
from runtime.engine import Engine
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_hook, define_tool
from tests.runtime.conftest import World, agent, prompt, side


@define_tool("Search the knowledge base")
async def search(state: Any) -> str:
    return "result"


class ClassifyArgs(BaseModel):
    intent: str


@define_tool("Record the intent", ClassifyArgs)
async def classify(state: Any, args: ClassifyArgs) -> dict[str, str]:
    return {"intent": args.intent, "recorded": "yes"}


@define_tool("Close the ticket")
async def close_ticket(state: Any) -> str:
    return "closed"


@define_tool("Always fails")
async def broken(state: Any) -> str:
    raise RuntimeError("database at /var/db/x.sqlite is locked (attempt 3)")


def _world(world: World, *tools: Any, script: TestScript, **side_options: Any) -> World:
    world.register(*tools)
    names = [t.name for t in tools]
    world.define(prompt(tools=names), agent(side_a=side("main", **side_options)))
    world.script("m", script)
    return world


# --- §5.1 stop on response ---------------------------------------------------------------


async def test_spec_5_1_stop_on_response_ends_turn_on_text_without_tool_calls(world: World) -> None:
    _world(world, search, script=TestScript().add_text("The answer").add_text("never used"))
    _, result = await world.chat("q")
    assert result.stop_reason == "stop_on_response"
    assert len(world.requests()) == 1
    assert result.final_text == "The answer"


async def test_spec_5_1_tool_only_responses_do_not_stop(world: World) -> None:
    script = TestScript().add_tool_call("search").add_tool_call("search").add_text("done")
    _world(world, search, script=script)
    _, result = await world.chat("q")
    assert len(world.requests()) == 3
    assert result.turn_outcomes[-1].reason == "stop_on_response"


async def test_spec_5_1_text_with_tool_calls_does_not_stop(world: World) -> None:
    script = TestScript().add_tool_call("search", content="Let me look").add_text("Found")
    _world(world, search, script=script)
    _, result = await world.chat("q")
    assert len(world.requests()) == 2 and result.final_text == "Found"


async def test_spec_4_1_stop_on_response_defaults_to_true(world: World) -> None:
    assert side("main").stop_on_response is True
    _world(world, script=TestScript().add_text("hi").add_text("unused"))
    _, result = await world.chat("q")
    assert result.steps == 1


async def test_spec_5_1_stop_on_response_false_keeps_the_side_going(world: World) -> None:
    script = (
        TestScript()
        .add_text("thinking aloud")
        .add_text("still going")
        .add_tool_call("close_ticket")
    )
    _world(
        world, close_ticket, script=script, stop_on_response=False, end_session_tool="close_ticket"
    )
    _, result = await world.chat("q")
    assert len(world.requests()) == 3
    assert result.stop_reason == "session_stop"


# --- §5.2 stop tool --------------------------------------------------------------------------


async def test_spec_5_2_stop_tool_ends_turn_and_records_response_property(world: World) -> None:
    script = TestScript().add_tool_call("classify", {"intent": "refund"}).add_text("unused")
    _world(
        world, classify, script=script, stop_tool="classify", stop_tool_response_property="intent"
    )
    thread, result = await world.chat("I want my money back")
    assert result.stop_reason == "stop_tool"
    assert result.value == "refund" and result.turn_outcomes[0].value == "refund"
    assert result.answer == "refund"
    assert len(world.requests()) == 1
    tool_rows = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert tool_rows[0].tool_status == "success"  # the stop tool itself still ran


async def test_spec_5_2_stop_tool_overrides_stop_on_response(world: World) -> None:
    script = (
        TestScript()
        .add_tool_call("search")
        .add_tool_call("classify", {"intent": "billing"}, content="Classifying now")
    )
    _world(
        world,
        search,
        classify,
        script=script,
        stop_tool="classify",
        stop_tool_response_property="intent",
    )
    _, result = await world.chat("q")
    assert (result.stop_reason, result.value) == ("stop_tool", "billing")


async def test_spec_5_2_stop_tool_without_code_is_supplied_by_the_engine(world: World) -> None:
    script = TestScript().add_tool_call("finish", {"verdict": "approved"})
    _world(world, script=script, stop_tool="finish", stop_tool_response_property="verdict")
    _, result = await world.chat("review this")
    offered = {t.name: t.parameters for t in world.requests()[0].tools}
    assert offered["finish"]["required"] == ["verdict"]
    assert (result.stop_reason, result.value) == ("stop_tool", "approved")


async def test_spec_5_2_stop_tool_value_falls_back_to_the_result(world: World) -> None:
    @define_tool("Decide")
    async def decide(state: Any) -> dict[str, str]:
        return {"decision": "go"}

    script = TestScript().add_tool_call("decide", {})
    _world(world, decide, script=script, stop_tool="decide", stop_tool_response_property="decision")
    _, result = await world.chat("q")
    assert result.value == "go"


# --- §5.3 end session tool ---------------------------------------------------------------------


async def test_spec_5_3_end_session_tool_ends_the_whole_session(world: World) -> None:
    script = TestScript().add_tool_call("close_ticket").add_text("unused")
    _world(world, close_ticket, script=script, end_session_tool="close_ticket")
    _, result = await world.chat("thanks, bye")
    assert result.stop_reason == "session_stop"
    assert len(world.requests()) == 1


async def test_spec_5_3_end_session_tool_ends_session_for_both_sides(world: World) -> None:
    world.register(close_ticket)
    world.define(
        prompt("pro", model="ma", tools=["close_ticket"]),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=10,
            side_a=side("pro", end_session_tool="close_ticket"),
            side_b=side("con"),
        ),
    )
    world.script("ma", TestScript().add_text("A1").add_tool_call("close_ticket"))
    world.script("mb", TestScript().add_text("B1").add_text("B never speaks again"))
    _, result = await world.chat("start")
    assert result.stop_reason == "session_stop"
    assert len(world.requests("mb")) == 1  # side B got no further turn


async def test_spec_5_3_failed_end_session_tool_call_does_not_end_the_session(world: World) -> None:
    calls = {"n": 0}

    @define_tool("Close, flaky")
    async def close(state: Any) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("try again")
        return "closed"

    script = TestScript().add_tool_call("close").add_tool_call("close").add_text("unused")
    _world(world, close, script=script, end_session_tool="close")
    _, result = await world.chat("q")
    assert result.stop_reason == "session_stop" and result.steps == 2


async def test_spec_5_3_end_session_tool_differs_from_stop_tool_in_dual_ai(world: World) -> None:
    world.register(classify)
    world.define(
        prompt("pro", model="ma", tools=["classify"]),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=3,
            side_a=side("pro", stop_tool="classify", stop_tool_response_property="intent"),
            side_b=side("con"),
        ),
    )
    world.script("ma", TestScript().add_tool_call("classify", {"intent": "x"}).add_text("A2"))
    world.script("mb", TestScript().add_text("B1"))
    _, result = await world.chat("start")
    # The stop tool ended only side A's turn: side B then took its turn.
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "stop_tool"),
        ("b", "stop_on_response"),
        ("a", "stop_on_response"),
    ]
    assert result.stop_reason == "max_session_turns"


# --- §5.4 max steps ------------------------------------------------------------------------------


async def test_spec_5_4_max_steps_forces_the_side_to_stop(world: World) -> None:
    script = TestScript()
    for _ in range(5):
        script.add_tool_call("search")
    _world(world, search, script=script, max_steps=3)
    _, result = await world.chat("q")
    assert result.stop_reason == "max_side_steps"
    assert len(world.requests()) == 3 and result.steps == 3


async def test_spec_5_4_budget_warning_injected_before_max_steps(world: World) -> None:
    script = TestScript().add_tool_call("search").add_tool_call("search").add_tool_call("search")
    _world(world, search, script=script, max_steps=3)
    await world.chat("q")
    warnings = [
        [m for m in request.messages if m["role"] == "system" and "last step" in m["content"]]
        for request in world.requests()
    ]
    assert [len(w) for w in warnings] == [0, 0, 1]
    assert world.requests()[2].messages[-1]["role"] == "system"  # at the tail, before the call


async def test_spec_5_4_budget_warning_can_be_turned_off_by_the_prompt(world: World) -> None:
    world.register(search)
    world.define(
        prompt(tools=["search"], step_budget_warning=False),
        agent(side_a=side("main", max_steps=2)),
    )
    world.script("m", TestScript().add_tool_call("search").add_tool_call("search"))
    _, result = await world.chat("q")
    assert result.stop_reason == "max_side_steps"
    assert all(m["role"] != "system" for r in world.requests() for m in r.messages)


async def test_spec_5_4_budget_warning_is_not_stored(world: World) -> None:
    _world(world, search, script=TestScript().add_tool_call("search").add_text("x"), max_steps=2)
    thread, _ = await world.chat("q")
    assert all(m.role != "system" for m in await world.messages(thread.id))


async def test_spec_5_4_max_steps_outranks_stop_on_response(world: World) -> None:
    _world(
        world, search, script=TestScript().add_tool_call("search").add_text("final"), max_steps=2
    )
    _, result = await world.chat("q")
    assert result.stop_reason == "max_side_steps"
    assert result.final_text == "final"


async def test_spec_5_4_max_steps_is_enforced_per_session(world: World) -> None:
    script = (
        TestScript().add_tool_call("search").add_text("one").add_tool_call("search").add_text("two")
    )
    _world(world, search, script=script, max_steps=2)
    thread, first = await world.chat("q1")
    second = await world.run(thread.id, "q2")
    assert first.stop_reason == second.stop_reason == "max_side_steps"
    assert second.steps == 2  # counters start again with each session


async def test_spec_5_4_global_step_ceiling_stops_runaway_sessions(
    world: World, store: Any
) -> None:
    world.register(search)
    world.define(prompt(tools=["search"]), agent(side_a=side("main", stop_on_response=False)))
    script = TestScript()
    for _ in range(6):
        script.add_tool_call("search")
    world.script("m", script)
    engine = Engine(
        store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        limits=Limits(max_total_steps=4),
    )
    thread = await engine.create_thread("agent")
    from runtime.engine import NewMessage

    result = await engine.run_session(thread.id, message=NewMessage("loop"))
    assert result.stop_reason == "max_total_steps" and result.steps == 4
    assert MAX_TOTAL_STEPS == 250


async def test_spec_5_4_larger_max_steps_raises_the_global_ceiling(
    world: World, store: Any
) -> None:
    world.register(search)
    world.define(prompt(tools=["search"]), agent(side_a=side("main", max_steps=6)))
    script = TestScript()
    for _ in range(6):
        script.add_tool_call("search")
    world.script("m", script)
    engine = Engine(
        store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        limits=Limits(max_total_steps=4),
    )
    thread = await engine.create_thread("agent")
    from runtime.engine import NewMessage

    result = await engine.run_session(thread.id, message=NewMessage("loop"))
    assert result.stop_reason == "max_side_steps" and result.steps == 6


# --- priority order -------------------------------------------------------------------------------


async def test_stop_priority_end_session_tool_beats_stop_tool(world: World) -> None:
    script = TestScript().add_tool_calls(
        [
            {"name": "classify", "arguments": {"intent": "x"}},
            {"name": "close_ticket", "arguments": {}},
        ]
    )
    _world(
        world,
        classify,
        close_ticket,
        script=script,
        stop_tool="classify",
        stop_tool_response_property="intent",
        end_session_tool="close_ticket",
    )
    _, result = await world.chat("q")
    assert result.stop_reason == "session_stop"


async def test_stop_priority_stop_tool_beats_max_steps(world: World) -> None:
    script = TestScript().add_tool_call("classify", {"intent": "y"})
    _world(
        world,
        classify,
        script=script,
        stop_tool="classify",
        stop_tool_response_property="intent",
        max_steps=1,
    )
    _, result = await world.chat("q")
    assert result.stop_reason == "stop_tool"


async def test_stop_priority_user_stop_beats_everything(world: World, harness: Any) -> None:
    @define_tool("Press stop")
    async def press(state: Any) -> str:
        harness.press_stop(state.thread_id)
        return "pressed"

    script = TestScript().add_tool_calls([{"name": "press"}, {"name": "close"}]).add_text("unused")
    world.register(press, close_ticket)
    world.define(prompt(tools=["press", "close_ticket"]), agent())
    world.script("m", script)
    thread, result = await world.chat("q")
    assert result.stop_reason == "aborted_by_user"
    rows = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert [r.name for r in rows] == ["press"]  # the second call never ran


async def test_state_stop_session_ends_the_session_after_the_step(world: World) -> None:
    @define_tool("Stop everything")
    async def halt(state: Any) -> str:
        state.execution.stop()
        return "halting"

    _world(world, halt, script=TestScript().add_tool_call("halt").add_text("unused"))
    _, result = await world.chat("q")
    assert result.stop_reason == "state_stop_session"
    assert len(world.requests()) == 1


# --- §6 session turns --------------------------------------------------------------------------


def _dual(world: World, turns: int | None, a: TestScript, b: TestScript, **a_side: Any) -> None:
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=turns,
            side_a=side("pro", **a_side),
            side_b=side("con"),
        ),
    )
    world.script("ma", a)
    world.script("mb", b)


async def test_spec_6_1_max_session_turns_must_be_enforced_for_dual_ai(world: World) -> None:
    many_a, many_b = TestScript(), TestScript()
    for i in range(10):
        many_a.add_text(f"A{i}")
        many_b.add_text(f"B{i}")
    _dual(world, 5, many_a, many_b)
    thread, result = await world.chat("go")
    assert result.stop_reason == "max_session_turns"
    assert result.turns == 5
    assert [m.content for m in await world.messages(thread.id)] == [
        "go",
        "A0",
        "B0",
        "A1",
        "B1",
        "A2",
    ]


async def test_spec_6_1_turn_counts_one_side_completing(world: World) -> None:
    a = TestScript().add_tool_call("search").add_tool_call("search").add_text("A done")
    world.register(search)
    world.define(
        prompt("pro", model="ma", tools=["search"]),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=2,
            side_a=side("pro"),
            side_b=side("con"),
        ),
    )
    world.script("ma", a)
    world.script("mb", TestScript().add_text("B done"))
    _, result = await world.chat("go")
    assert (result.steps, result.turns) == (4, 2)  # three steps made one turn of side A


async def test_spec_6_1_dual_ai_without_max_session_turns_is_capped_at_250(world: World) -> None:
    assert MAX_SESSION_TURNS == 250
    from runtime.loop.stops import session_turn_cap

    assert (
        session_turn_cap(None) == 250 and session_turn_cap(1000) == 250 and session_turn_cap(7) == 7
    )


async def test_spec_6_2_step_and_turn_counters_are_tracked(world: World) -> None:
    seen: list[tuple[int, int, int]] = []

    @define_tool("Report counters")
    async def counters(state: Any) -> str:
        e = state.execution
        seen.append((e.step_count, e.side_a_step_count, e.side_b_step_count))
        return "ok"

    world.register(counters)
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb", tools=["counters"]),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=2,
            side_a=side("pro"),
            side_b=side("con"),
        ),
    )
    world.script("ma", TestScript().add_text("A1"))
    world.script("mb", TestScript().add_tool_call("counters").add_text("B1"))
    thread, result = await world.chat("go")
    assert seen == [(2, 1, 1)]
    assert (result.steps, result.turns) == (3, 2)
    record = await world.store.get_thread(thread.id)
    assert record is not None and record.execution_state.turns == {"a": 1, "b": 1}


async def test_dual_ai_side_without_turn_condition_switches_every_step(world: World) -> None:
    _dual(
        world,
        3,
        TestScript().add_text("A1").add_text("A2"),
        TestScript().add_text("B1"),
        stop_on_response=False,
    )
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "every_step"),
        ("b", "stop_on_response"),
        ("a", "every_step"),
    ]


async def test_dual_ai_max_side_steps_ends_the_sides_turn(world: World) -> None:
    _dual(
        world,
        3,
        TestScript().add_text("A1").add_text("A2"),
        TestScript().add_text("B1"),
        max_steps=1,
    )
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "max_side_steps"),
        ("b", "stop_on_response"),
        ("a", "max_side_steps"),
    ]
    assert result.stop_reason == "max_session_turns"


@pytest.mark.parametrize(
    "reason", ["stop_on_response", "stop_tool", "max_side_steps", "session_stop"]
)
async def test_stop_reasons_are_recorded_on_the_session_progress(world: World, reason: str) -> None:
    choices: dict[str, dict[str, Any]] = {
        "stop_on_response": {},
        "stop_tool": {"stop_tool": "classify", "stop_tool_response_property": "intent"},
        "max_side_steps": {"max_steps": 1},
        "session_stop": {"end_session_tool": "close_ticket"},
    }
    options = choices[reason]
    script = {
        "stop_on_response": TestScript().add_text("hi"),
        "stop_tool": TestScript().add_tool_call("classify", {"intent": "a"}),
        "max_side_steps": TestScript().add_tool_call("search"),
        "session_stop": TestScript().add_tool_call("close_ticket"),
    }[reason]
    _world(world, search, classify, close_ticket, script=script, **options)
    thread, result = await world.chat("q")
    progress = await world.store.load_progress(thread.id)
    assert progress is not None and progress.finished
    assert progress.stop_reason == result.stop_reason == reason
    assert progress.turn_outcomes[-1].reason == reason


async def test_spec_5_4_max_steps_and_max_session_turns_should_be_enforced(world: World) -> None:
    """Both limits end a runaway session on their own (resource exhaustion)."""
    runaway_a, runaway_b = TestScript(), TestScript()
    for i in range(40):
        runaway_a.add_text(f"A{i}")
        runaway_b.add_tool_call("search")
    world.register(search)
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb", tools=["search"]),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=20,
            side_a=side("pro"),
            side_b=side("con", max_steps=4),
        ),
    )
    world.script("ma", runaway_a)
    world.script("mb", runaway_b)
    _, result = await world.chat("go")
    # B's maxSteps ends each of its turns; maxSessionTurns ends the session.
    assert result.stop_reason == "max_session_turns"
    assert len(result.turn_outcomes) == 20
    assert {t.reason for t in result.turn_outcomes if t.side == "b"} == {"max_side_steps"}
    # B's four steps are its session's (issue #38 item 2): then one step per turn.
    assert len(world.requests("mb")) == 4 + 9


async def test_a_stop_pressed_while_the_session_starts_is_kept_and_ends_it(
    world: World, harness: Any
) -> None:
    # The host planned the session on a thread that was not stopped; the user presses stop
    # before the session's first commit (here: while the inbound message is prepared). The
    # start must not clear that stop, and no model request goes out.
    async def press(state: Any, message: dict[str, Any]) -> dict[str, Any]:
        harness.press_stop(state.thread_id)
        return message

    hook = define_hook("before_create_message", press)
    world.register(hook)
    world.define(prompt(hooks=[hook.id]), agent())
    world.script("m", TestScript().add_text("never sent"))
    thread, result = await world.chat("q")
    assert result.stop_reason == "aborted_by_user"
    assert world.requests() == []
    assert (await world.store.get_thread(thread.id)).stopped  # type: ignore[union-attr]
