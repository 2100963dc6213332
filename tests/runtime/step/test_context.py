"""What the model sees: system prompt rendering, includeChat, includePastTools, orphans, queue."""

from __future__ import annotations

from typing import Any

from runtime.core.messages import Message, make_tool_call
from runtime.core.spec import PromptEnvPart, PromptIncludePart, PromptTextPart
from runtime.providers.test_provider import TestScript
from runtime.step.history import MISSING_RESULT, Window, to_llm_messages
from runtime.tools.registry import define_tool
from tests.runtime.conftest import Harness, World, agent, prompt


@define_tool("Search")
async def search(state: Any) -> str:
    return "hit"


async def test_system_prompt_renders_text_includes_and_env_parts(
    world: World, harness: Harness
) -> None:
    parts = [
        PromptTextPart(content="You work for "),
        PromptEnvPart(property="COMPANY"),
        PromptTextPart(content=". "),
        PromptIncludePart(prompt="rules"),
        PromptEnvPart(property="UNSET_VALUE"),
        PromptIncludePart(prompt="missing_prompt"),
    ]
    world.define(
        prompt("main", text=parts),
        prompt(
            "rules", text=[PromptTextPart(content="Be kind."), PromptIncludePart(prompt="main")]
        ),
        agent(),
    )
    harness.set_instance_env("COMPANY", "Acme")
    world.script("m", TestScript().add_text("ok"))
    await world.chat("hi")
    assert (
        world.requests()[0].system
        == "You work for Acme. Be kind.[Prompt not found: missing_prompt]"
    )


async def test_without_include_chat_only_the_current_session_is_sent(world: World) -> None:
    world.define(prompt(include_chat=False), agent())
    world.script("m", TestScript().add_text("one").add_text("two"))
    thread, _ = await world.chat("first question")
    await world.run(thread.id, "second question")
    assert world.requests()[1].messages == [{"role": "user", "content": "second question"}]


async def test_with_include_chat_the_whole_conversation_is_sent(world: World) -> None:
    world.define(prompt(include_chat=True), agent())
    world.script("m", TestScript().add_text("one").add_text("two"))
    thread, _ = await world.chat("first question")
    await world.run(thread.id, "second question")
    assert [m["content"] for m in world.requests()[1].messages] == [
        "first question",
        "one",
        "second question",
    ]


async def test_without_include_past_tools_earlier_turns_tool_rows_are_dropped(world: World) -> None:
    world.register(search)
    world.define(prompt(tools=["search"], include_chat=True, include_past_tools=False), agent())
    world.script(
        "m",
        TestScript()
        .add_tool_call("search", id="old")
        .add_text("first answer")
        .add_tool_call("search", id="new")
        .add_text("x"),
    )
    thread, _ = await world.chat("q1")
    await world.run(thread.id, "q2")
    # Within the current turn the loop still sees its own calls and results.
    third = world.requests()[3].messages
    assert [(m["role"], m.get("tool_call_id")) for m in third] == [
        ("user", None),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
        ("tool", "new"),
    ]
    assert third[3]["tool_calls"][0]["id"] == "new"


async def test_with_include_past_tools_earlier_tool_rows_are_kept(world: World) -> None:
    world.register(search)
    world.define(prompt(tools=["search"], include_chat=True, include_past_tools=True), agent())
    world.script("m", TestScript().add_tool_call("search", id="old").add_text("a1").add_text("a2"))
    thread, _ = await world.chat("q1")
    await world.run(thread.id, "q2")
    roles = [m["role"] for m in world.requests()[2].messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]


def _window(**options: Any) -> Window:
    values: dict[str, Any] = {
        "include_chat": True,
        "include_past_tools": True,
        "session_start": 0,
        "turn_start": 0,
        "side": "a",
        "perspective": False,
    }
    values.update(options)
    return Window(**values)


def _row(n: int, role: str, **fields: Any) -> Message:
    return Message(id=f"m{n}", role=role, created_at=n, **fields)  # type: ignore[arg-type]


def test_orphaned_tool_results_are_dropped() -> None:
    rows = [
        _row(1, "user", content="hi"),
        _row(2, "tool", content="stray", tool_call_id="ghost", name="x"),
        _row(3, "assistant", content="hello"),
    ]
    assert [m["role"] for m in to_llm_messages(rows, _window())] == ["user", "assistant"]


def test_tool_call_without_result_gets_a_synthesized_error_result() -> None:
    call = make_tool_call("c1", "search", {})
    rows = [
        _row(1, "user", content="hi"),
        _row(2, "assistant", tool_calls=[call]),
        _row(3, "user", content="again"),
    ]
    sent = to_llm_messages(rows, _window())
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "search",
        "content": MISSING_RESULT,
        "is_error": True,
    }
    assert sent[3] == {"role": "user", "content": "again"}


def test_results_are_placed_right_after_their_call() -> None:
    """A message injected while a tool ran sits between call and result in storage."""
    call = make_tool_call("c1", "search", {})
    rows = [
        _row(1, "assistant", tool_calls=[call]),
        _row(2, "user", content="injected by the tool"),
        _row(3, "tool", content="hit", tool_call_id="c1", name="search"),
    ]
    assert [m["role"] for m in to_llm_messages(rows, _window())] == ["assistant", "tool", "user"]


def test_pending_and_failed_rows_are_never_sent() -> None:
    from runtime.step.history import select_rows

    rows = [
        _row(1, "user", content="hi"),
        _row(2, "assistant", content=None, status="pending"),
        _row(3, "assistant", content=None, status="failed"),
    ]
    assert [m.id for m in select_rows(rows, _window())] == ["m1"]


async def test_queued_message_is_drained_before_the_next_step(world: World) -> None:
    @define_tool("Slow lookup")
    async def slow(state: Any) -> str:
        await state.queue_message("Actually, also check B")
        return "A checked"

    world.register(slow)
    world.define(prompt(tools=["slow"]), agent())
    world.script("m", TestScript().add_tool_call("slow").add_text("Checked A and B"))
    thread, _ = await world.chat("check A")
    contents = [m.content for m in await world.messages(thread.id)]
    assert contents == ["check A", None, "A checked", "Actually, also check B", "Checked A and B"]
    assert world.requests()[1].messages[-1] == {"role": "user", "content": "Actually, also check B"}


async def test_message_queued_after_the_turn_ended_waits_for_the_next_session(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_text("done"))
    thread = await world.thread()
    from runtime.engine import NewMessage

    await world.engine.run_session(thread.id, message=NewMessage("hi"))
    state = await world.engine.thread_state(thread.id)
    await state.queue_message("later")
    assert [q.content for q in world.store.queued(thread.id)] == ["later"]  # type: ignore[attr-defined]


async def test_created_at_is_strictly_increasing_within_a_thread(world: World) -> None:
    world.register(search)
    world.define(prompt(tools=["search"], parallel_tool_calls=True), agent())
    world.script(
        "m",
        TestScript()
        .add_tool_calls([{"name": "search"}, {"name": "search"}, {"name": "search"}])
        .add_text("ok"),
    )
    thread, _ = await world.chat("x")
    stamps = [m.created_at for m in await world.messages(thread.id)]
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))


async def test_the_request_carries_the_prompt_tools_tool_choice_and_parallel_flag(
    world: World,
) -> None:
    world.register(search)
    world.define(
        prompt(tools=["search"], tool_choice="required", parallel_tool_calls=False), agent()
    )
    world.script("m", TestScript().add_text("ok"))
    await world.chat("x")
    request = world.requests()[0]
    assert [t.name for t in request.tools] == ["search"]
    assert (request.tool_choice, request.parallel_tool_calls) == ("required", False)
    assert request.metadata["prompt_name"] == "main" and request.sequence == 0


async def test_models_without_function_calling_get_no_tools(world: World) -> None:
    from runtime.core.spec import ModelCapabilities, ModelDefinition

    world.register(search)
    world.define(prompt(tools=["search"]), agent())
    world.script("m", TestScript().add_text("ok"))
    world.define(
        ModelDefinition(
            name="m",
            provider="test",
            model="x",
            capabilities=ModelCapabilities(function_calling=False),
        )
    )
    await world.chat("x")
    assert world.requests()[0].tools == []


def test_failed_tool_results_are_flagged_as_errors() -> None:
    ok, bad = make_tool_call("c1", "search", {}), make_tool_call("c2", "fetch", {})
    rows = [
        _row(1, "user", content="hi"),
        _row(2, "assistant", tool_calls=[ok, bad]),
        _row(3, "tool", content="found", tool_call_id="c1", name="search", tool_status="success"),
        _row(4, "tool", content="Error: 404", tool_call_id="c2", name="fetch", tool_status="error"),
    ]
    sent = to_llm_messages(rows, _window())
    assert "is_error" not in sent[2] and sent[3]["is_error"] is True


def test_provider_data_goes_back_on_the_sides_own_messages_only() -> None:
    data = {"anthropic": {"thinking": [{"type": "thinking", "thinking": "t", "signature": "s"}]}}
    rows = [
        _row(1, "user", content="hi"),
        _row(2, "assistant", content="hello", side="a", metadata={"provider_data": data}),
    ]
    assert to_llm_messages(rows, _window())[1]["provider_data"] == data
    as_other_side = to_llm_messages(rows, _window(side="b", perspective=True))
    assert as_other_side[1]["role"] == "user" and "provider_data" not in as_other_side[1]
