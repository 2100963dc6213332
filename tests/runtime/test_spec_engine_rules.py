"""Spec rules the engine once contradicted (issue #15), over every store of the engine suite.

- ``forceTurn`` "has no effect on ai_human agents" (spec 0.10 ``ExecutionState.forceTurn``).
- ``maxSessionTurns``: "Hard maximum: 250 turns regardless of this setting" (capped, not refused).
- ``getMessages`` pages like ``GET /api/threads/{id}/messages`` (``order`` picks the end).
- ``maxSteps`` forces the *side* to stop (agents-spec §5.4): in ``dual_ai`` its turn ends and
  the session goes on until a session-level condition holds (§2.2, §6.1); the budget warning
  counts the steps of the turn it speaks of.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from runtime.core.messages import QUEUED_TOOL_CALL, Message, make_tool_call, new_id
from runtime.core.spec import AgentDefinition
from runtime.delegation.inline_host import InlineHost
from runtime.engine import Engine, NewMessage
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import Commit
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt, side


@define_tool("Search the knowledge base")
async def search(state: Any) -> str:
    return "result"


@define_tool("Hand the turn to side B")
async def hand_to_b(state: Any) -> str:
    state.execution.force_turn("b")
    return "handed"


def _dual(world: World, turns: int, script_a: TestScript, script_b: TestScript, **b: Any) -> None:
    world.register(search, hand_to_b)
    world.define(
        prompt("pro", model="ma", tools=["search", "hand_to_b"]),
        prompt("con", model="mb", tools=["search"]),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=turns,
            side_a=side("pro"),
            side_b=side("con", **b),
        ),
    )
    world.script("ma", script_a)
    world.script("mb", script_b)


# --- forceTurn -----------------------------------------------------------------------------


async def test_spec_force_turn_has_no_effect_on_ai_human_agents(world: World) -> None:
    world.register(hand_to_b)
    world.define(prompt(tools=["hand_to_b"]), agent())
    world.script("m", TestScript().add_tool_call("hand_to_b").add_text("still mine"))
    _, result = await world.chat("x")
    # The session went on exactly as without the call: the model answered the tool result.
    assert result.stop_reason == "stop_on_response" and result.final_text == "still mine"
    assert len(world.requests()) == 2
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [("a", "stop_on_response")]


async def test_spec_force_turn_still_switches_sides_in_dual_ai(world: World) -> None:
    _dual(world, 1, TestScript().add_tool_call("hand_to_b"), TestScript().add_text("B speaks"))
    _, result = await world.chat("x")
    assert [t.side for t in result.turn_outcomes] == ["b"]


# --- maxSessionTurns -------------------------------------------------------------------------


async def test_spec_max_session_turns_above_250_is_capped_at_250(world: World) -> None:
    a, b = TestScript(), TestScript()
    for i in range(130):
        a.add_text(f"A{i}")
        b.add_text(f"B{i}")
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=400,
            side_a=side("pro"),
            side_b=side("con"),
        ),
    )
    world.script("ma", a)
    world.script("mb", b)
    _, result = await world.chat("go")
    assert result.stop_reason == "max_session_turns"
    assert len(result.turn_outcomes) == 250
    assert len(world.requests("ma")) + len(world.requests("mb")) == 250


# --- getMessages paging ----------------------------------------------------------------------


async def _thread_with(world: World, n: int) -> Any:
    world.define(prompt(), agent())
    thread = await world.thread()
    rows = [
        Message(id=new_id(), role="user", content=f"m{i}", created_at=1_000_000 + i)
        for i in range(n)
    ]
    await world.store.commit(thread.id, Commit(messages=rows))
    return await world.engine.thread_state(thread.id)


async def test_spec_get_messages_asc_pages_from_the_oldest_end(world: World) -> None:
    state = await _thread_with(world, 5)
    first = await state.get_messages(limit=2, order="asc")
    assert [m.content for m in first.messages] == ["m0", "m1"]
    assert (first.total, first.has_more) == (5, True)
    second = await state.get_messages(limit=2, offset=2, order="asc")
    assert [m.content for m in second.messages] == ["m2", "m3"] and second.has_more
    last = await state.get_messages(limit=2, offset=4, order="asc")
    assert [m.content for m in last.messages] == ["m4"] and not last.has_more
    beyond = await state.get_messages(limit=2, offset=9, order="asc")
    assert beyond.messages == [] and not beyond.has_more


async def test_spec_get_messages_desc_pages_from_the_newest_end(world: World) -> None:
    state = await _thread_with(world, 5)
    default = await state.get_messages(limit=2)
    newest = await state.get_messages(limit=2, order="desc")
    assert [m.content for m in default.messages] == [m.content for m in newest.messages]
    assert [m.content for m in newest.messages] == ["m3", "m4"] and newest.has_more
    older = await state.get_messages(limit=2, offset=2, order="desc")
    assert [m.content for m in older.messages] == ["m1", "m2"] and older.has_more
    oldest = await state.get_messages(limit=2, offset=4, order="desc")
    assert [m.content for m in oldest.messages] == ["m0"] and not oldest.has_more


# --- maxSteps in dual_ai ---------------------------------------------------------------------


async def test_spec_dual_ai_max_steps_ends_the_sides_turn_not_the_session(world: World) -> None:
    runaway = TestScript()
    for _ in range(6):
        runaway.add_tool_call("search")
    _dual(world, 4, TestScript().add_text("A1").add_text("A2"), runaway, max_steps=3)
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "stop_on_response"),
        ("b", "max_side_steps"),
        ("a", "stop_on_response"),
        ("b", "max_side_steps"),
    ]
    assert result.stop_reason == "max_session_turns"
    # maxSteps counts B's steps in the session (issue #38 item 2): three in its first turn,
    # then its budget is spent and its second turn ends after one step.
    assert len(world.requests("mb")) == 4


async def test_spec_dual_ai_session_ends_only_on_a_session_condition(world: World) -> None:
    """A side at its maxSteps hands over; an end-session tool of the other side ends it all."""
    world.register(search)

    @define_tool("Close the debate")
    async def close(state: Any) -> str:
        return "closed"

    world.register(close)
    world.define(
        prompt("pro", model="ma", tools=["search"]),
        prompt("con", model="mb", tools=["close"]),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=50,
            side_a=side("pro", max_steps=2),
            side_b=side("con", end_session_tool="close"),
        ),
    )
    world.script("ma", TestScript().add_tool_call("search").add_tool_call("search"))
    world.script("mb", TestScript().add_tool_call("close"))
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "max_side_steps"),
        ("b", "session_stop"),
    ]
    assert (result.stop_reason, result.stopped_by) == ("session_stop", "b")


async def test_spec_budget_warning_comes_once_before_the_sides_last_step(world: World) -> None:
    """maxSteps counts the side's steps in the session (issue #38 item 2): the warning comes
    once, before the side's last step, not again in its later turns."""
    b = TestScript()
    for _ in range(6):
        b.add_tool_call("search")
    _dual(world, 4, TestScript().add_text("A1").add_text("A2"), b, max_steps=3)
    await world.chat("go")
    warned = [
        any(m["role"] == "system" and "last step (3 of 3)" in m["content"] for m in r.messages)
        for r in world.requests("mb")
    ]
    assert warned == [False, False, True, False]


# --- broadcast rules (docs/api.md "Order of one turn") --------------------------------------


@define_tool("Queue a note for the next step")
async def note(state: Any) -> str:
    await state.queue_message("a note for later")
    return "noted"


def never_completed_unseen(frames: list[dict[str, Any]]) -> list[str]:
    """The step rows (they carry ``request_sent_at``) a client rendering ``frames`` in order
    would see completed or failed without having seen them pending first."""
    pending: set[str] = set()
    unseen: list[str] = []
    for frame in frames:
        if frame["type"] != "message_data":
            continue
        data = frame["data"]
        if data["status"] == "pending":
            pending.add(frame["message_id"])
        elif data.get("request_sent_at") and frame["message_id"] not in pending:
            unseen.append(frame["message_id"])
    return unseen


async def test_spec_every_step_row_is_broadcast_pending_before_it_completes(
    world: World,
) -> None:
    world.register(search, note)
    world.define(
        prompt(tools=["search", "note", "helper"]),
        agent(),
        prompt("helper", model="mh", tool_description="Helps"),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("search")  # fast replies: the opening rides with the response
        .add_tool_call("helper", {"q": "x"})  # a sub-prompt's own step one level deeper
        .add_tool_call("note")
        .add_text("done"),
    )
    world.script("mh", TestScript().add_text("helped"))
    thread, result = await world.chat("go")
    assert result.final_text == "done"
    frames = world.sink.frames[thread.id]
    steps = {f["message_id"] for f in frames if f["type"] == "message_data"}
    rows = [m for m in await world.messages(thread.id) if m.request_sent_at]
    assert len(rows) == 5 and {m.id for m in rows} <= steps  # 4 top-level steps + 1 deeper
    assert never_completed_unseen(frames) == []


async def test_spec_queued_messages_are_broadcast_at_once_as_pending(world: World) -> None:
    world.register(note)
    world.define(prompt(tools=["note"]), agent())
    world.script("m", TestScript().add_tool_call("note").add_text("read it"))
    thread, _ = await world.chat("go")
    frames = [f for f in world.sink.frames[thread.id] if f["type"] == "message_data"]
    [queued] = [f for f in frames if f["data"]["content"] == "a note for later"][:1]
    assert queued["data"]["status"] == "pending"
    assert queued["data"]["metadata"]["queued"] is True
    assert queued["data"]["metadata"]["queue_status"] == "queued"
    # Shown when queued (before the tool's result row), stored later under the same id.
    order = [f["message_id"] for f in frames]
    tool_row = next(f for f in frames if f["data"]["role"] == "tool")
    assert order.index(queued["message_id"]) < order.index(tool_row["message_id"])
    stored = [f for f in frames if f["message_id"] == queued["message_id"]][-1]
    assert stored["data"]["status"] == "completed" and "queued" not in stored["data"]["metadata"]


# --- queueTool on an idle thread -------------------------------------------------------------


class LookupArgs(BaseModel):
    order: str


@define_tool("Look an order up", LookupArgs)
async def lookup_order(state: Any, args: LookupArgs) -> str:
    return f"order {args.order}: shipped"


def _hosted(world: World) -> InlineHost:
    """The world's engine with an ``InlineHost``: a woken idle thread runs as a task."""
    host = InlineHost()
    world._engine = Engine(
        world.store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        sleep=world._sleep,
        subagent_host=host,
    )
    host.engine = world._engine
    return host


async def test_spec_queue_tool_on_an_idle_thread_starts_a_session_with_that_call(
    world: World,
) -> None:
    host = _hosted(world)
    world.register(lookup_order)
    world.define(prompt(tools=["lookup_order"]), agent())
    world.script("m", TestScript().add_text("Your order has shipped."))
    thread = await world.thread()
    state = await world.engine.thread_state(thread.id)
    call_id = state.queue_tool("lookup_order", {"order": "A-7"})
    await world.engine.settle()
    await host.idle()
    rows = await world.messages(thread.id)
    assert [(m.role, m.status) for m in rows] == [
        ("assistant", "completed"),  # the queued call, run as the session's first step
        ("tool", "completed"),
        ("assistant", "completed"),  # the model answers the result
    ]
    opening, result, answer = rows
    assert [c["id"] for c in opening.tool_calls or []] == [call_id]
    assert opening.metadata.get("queued_tools") is True
    assert "queued_tool_call" not in opening.metadata
    assert result.tool_call_id == call_id and result.content == "order A-7: shipped"
    assert answer.content == "Your order has shipped."
    # The model saw the call and its result (one model step: the tool is not a step).
    [request] = world.requests()
    assert [m["role"] for m in request.messages][-2:] == ["assistant", "tool"]
    # The queued call was shown at once, like any queued message.
    first = next(f for f in world.sink.frames[thread.id] if f["type"] == "message_data")
    assert first["message_id"] == opening.id and first["data"]["status"] == "pending"
    assert first["data"]["metadata"]["queued"] is True


async def test_spec_queue_tool_in_a_running_session_still_joins_the_step(world: World) -> None:
    @define_tool("Queue a lookup")
    async def chain(state: Any) -> str:
        state.queue_tool("lookup_order", {"order": "B-1"})
        return "chained"

    world.register(lookup_order, chain)
    world.define(prompt(tools=["lookup_order", "chain"]), agent())
    world.script("m", TestScript().add_tool_call("chain").add_text("done"))
    thread, result = await world.chat("go")
    tools = [m.content for m in await world.messages(thread.id) if m.role == "tool"]
    assert tools == ["chained", "order B-1: shipped"] and result.final_text == "done"


async def test_spec_queue_tool_taken_as_a_sessions_first_message_runs_too(world: World) -> None:
    """The production runner starts a session from the queue's head (its first message comes
    in as the session's message): a queued call is run the same way."""
    world.register(lookup_order)
    world.define(prompt(tools=["lookup_order"]), agent())
    world.script("m", TestScript().add_text("Shipped."))
    thread = await world.thread()
    call = make_tool_call("call_head", "lookup_order", {"order": "C-3"})
    head = NewMessage("", role="assistant", metadata={QUEUED_TOOL_CALL: call})
    result = await world.engine.run_session(thread.id, message=head)
    rows = await world.messages(thread.id)
    assert [(m.role, m.content) for m in rows] == [
        ("assistant", None),
        ("tool", "order C-3: shipped"),
        ("assistant", "Shipped."),
    ]
    assert result.final_text == "Shipped." and result.steps == 1
