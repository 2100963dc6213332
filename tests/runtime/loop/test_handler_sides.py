"""Spec 0.2.0 handler-backed sides (issue #54, row A3 of shared/reference/spec-0.2.0-surface.md).

A side ``{"handler": name}`` runs no model: ``execute(state, message)`` is called once per
message the side receives, in order, at most once (a per-side watermark stored with the
thread advances before each call). Observed at the edge: the stored messages, the logs and
the session's stop reason. These also run over ``DjangoStore``
(``tests/agents_app/bridge/engine_on_django``).
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import AgentDefinition, SideConfig
from runtime.extend import HandlerError, define_handler
from runtime.store.protocol import LogQuery, LogRecord
from tests.runtime.conftest import World, prompt, side


class Crash(BaseException):
    """The worker dying in the middle of a handler call (not an error the handler raises)."""


def _agent(a: SideConfig, b: SideConfig, **options: Any) -> AgentDefinition:
    return AgentDefinition(name="agent", side_a=a, side_b=b, **options)


def _handler_a_person_b() -> AgentDefinition:
    return _agent(SideConfig(handler="echo"), SideConfig(human=True))


def _echo(calls: list[str], fail_on: str = "") -> Any:
    def execute(state: Any, message: Any) -> str:
        calls.append(message.content)
        if message.content == fail_on:
            raise ValueError(f"cannot echo {fail_on!r}")
        return f"echo: {message.content}"

    return define_handler(name="echo", description="Says it back.", execute=execute)


async def _handler_logs(world: World, thread_id: str) -> list[LogRecord]:
    return await world.store.list_logs(thread_id, LogQuery(limit=None, kind="handler_execution"))


async def _said(world: World, thread_id: str) -> list[tuple[str, str | None, str | None]]:
    return [(m.role, m.side, m.content) for m in await world.messages(thread_id)]


async def test_A3_handler_side_takes_each_inbound_message_once(world: World) -> None:
    calls: list[str] = []
    world.register(_echo(calls))
    world.define(_handler_a_person_b())
    thread = await world.thread()
    # Two messages already in the thread, a third that starts the session.
    at_rest = await world.engine.thread_state(thread.id)
    await at_rest.inject_message("user", "one")
    await at_rest.inject_message("user", "two")

    first = await world.run(thread.id, "three")
    second = await world.run(thread.id, "four")

    assert calls == ["one", "two", "three", "four"]
    # The person is side B: after the handler's turn the session waits for them.
    assert (first.stop_reason, second.stop_reason) == ("awaiting_human", "awaiting_human")
    assert await _said(world, thread.id) == [
        ("user", "b", "one"),
        ("user", "b", "two"),
        ("user", "b", "three"),
        ("assistant", "a", "echo: one"),
        ("assistant", "a", "echo: two"),
        ("assistant", "a", "echo: three"),
        ("user", "b", "four"),
        ("assistant", "a", "echo: four"),
    ]
    logs = await _handler_logs(world, thread.id)
    received = {m.id: m.content for m in await world.messages(thread.id)}
    assert [(received[str(log.message_id)], log.provider, log.model) for log in logs] == [
        ("one", "system", "echo"),
        ("two", "system", "echo"),
        ("three", "system", "echo"),
        ("four", "system", "echo"),
    ]
    assert all(log.is_complete and not log.error_type for log in logs)
    # No model was asked anything: a handler side takes no steps of an LLM.
    assert not world.scripted


async def test_A3_handler_failure_is_logged_and_session_goes_on(world: World) -> None:
    calls: list[str] = []
    world.register(_echo(calls, fail_on="boom"))
    world.define(_handler_a_person_b())
    thread = await world.thread()
    await (await world.engine.thread_state(thread.id)).inject_message("user", "boom")

    result = await world.run(thread.id, "fine")

    assert calls == ["boom", "fine"]
    assert result.stop_reason == "awaiting_human"
    assert [content for _, _, content in await _said(world, thread.id)] == [
        "boom",
        "fine",
        "echo: fine",
    ]
    failed, ok = await _handler_logs(world, thread.id)
    assert (failed.kind, failed.error_type, failed.error, failed.is_complete) == (
        "handler_execution",
        "handler_execution_error",
        "cannot echo 'boom'",
        True,
    )
    assert (ok.error_type, ok.is_complete) == ("", True)


async def test_A3_handler_watermark_survives_a_retry(world: World) -> None:
    calls: list[str] = []

    def execute(state: Any, message: Any) -> str:
        calls.append(message.content)
        if message.content == "crash" and calls.count("crash") == 1:
            raise Crash  # the worker dies while the handler runs
        return f"echo: {message.content}"

    world.register(define_handler(name="echo", description="Says it back.", execute=execute))
    world.define(_handler_a_person_b())
    thread = await world.thread()

    with pytest.raises(Crash):
        await world.run(thread.id, "crash")
    retried = await world.engine.run_session(thread.id)  # the task is delivered again
    after = await world.run(thread.id, "next")

    # The message the worker died on is never handed over a second time.
    assert calls == ["crash", "next"]
    assert (retried.stop_reason, after.stop_reason) == ("awaiting_human", "awaiting_human")
    assert [content for _, _, content in await _said(world, thread.id)] == [
        "crash",
        "next",
        "echo: next",
    ]
    interrupted, done = await _handler_logs(world, thread.id)
    assert (interrupted.is_complete, interrupted.error_type) == (True, "interrupted")
    assert (done.is_complete, done.error_type) == (True, "")


async def test_A3_idle_handlers_stop(world: World) -> None:
    calls: list[str] = []

    def quiet(state: Any, message: Any) -> None:
        calls.append(message.content)

    world.register(
        define_handler(name="ping", description="Reads.", execute=quiet),
        define_handler(name="pong", description="Reads.", execute=quiet),
    )
    world.define(_agent(SideConfig(handler="ping"), SideConfig(handler="pong")))

    _, result = await world.chat("hello")

    # Side A took "hello" and said nothing; side B has nothing to answer: both are idle.
    assert calls == ["hello"]
    assert (result.stop_reason, result.turns) == ("handler_idle", 1)


async def test_A3_exchange_cap_counts_handler_turns(world: World) -> None:
    def ping(state: Any, message: Any) -> str:
        return f"ping after {message.content}"

    def pong(state: Any, message: Any) -> str:
        return f"pong after {message.content}"

    world.register(
        define_handler(name="ping", description="Pings.", execute=ping),
        define_handler(name="pong", description="Pongs.", execute=pong),
    )
    world.define(
        _agent(SideConfig(handler="ping"), SideConfig(handler="pong"), max_session_turns=2)
    )

    thread, result = await world.chat("go")

    assert result.stop_reason == "max_session_turns"
    assert await _said(world, thread.id) == [
        ("user", "b", "go"),
        ("assistant", "a", "ping after go"),
        ("user", "b", "pong after ping after go"),
        ("assistant", "a", "ping after pong after ping after go"),
        ("user", "b", "pong after ping after pong after ping after go"),
    ]


async def test_A3_stop_session_in_a_handler_ends_the_session(world: World) -> None:
    calls: list[str] = []

    def stopper(state: Any, message: Any) -> str:
        calls.append(message.content)
        state.execution.stop_session("enough")
        return "bye"

    world.register(define_handler(name="echo", description="Stops.", execute=stopper))
    world.define(_handler_a_person_b())
    thread = await world.thread()
    await (await world.engine.thread_state(thread.id)).inject_message("user", "first")

    result = await world.run(thread.id, "second")

    # The session ends after the call that asked; the rest waits for the next session.
    assert calls == ["first"]
    assert (result.stop_reason, result.value, result.stopped_by) == (
        "state_stop_session",
        "enough",
        "a",
    )
    assert [content for _, _, content in await _said(world, thread.id)] == [
        "first",
        "second",
        "bye",
    ]


async def test_A3_a_prompt_side_and_a_handler_side_take_turns(world: World) -> None:
    """The handler (side B) answers each reply of the AI (side A) with the side's message;
    the AI sees it as the user's."""

    def grader(state: Any, message: Any) -> str:
        return "Correct." if "4" in (message.content or "") else "Try again."

    world.register(define_handler(name="grader", description="Grades.", execute=grader))
    world.define(prompt(), _agent(side(), SideConfig(handler="grader"), max_session_turns=2))
    world.script("m", [{"content": "5"}, {"content": "4"}])

    thread, result = await world.chat("What is 2 + 2?")

    assert result.stop_reason == "max_session_turns"
    assert [content for _, _, content in await _said(world, thread.id)] == [
        "What is 2 + 2?",
        "5",
        "Try again.",
        "4",
        "Correct.",
    ]
    second = world.requests()[1]
    assert [(m["role"], m["content"]) for m in second.messages[-2:]] == [
        ("assistant", "5"),
        ("user", "Try again."),
    ]


def test_A3_define_handler_refuses_what_it_cannot_run() -> None:
    with pytest.raises(HandlerError, match="description is required"):
        define_handler(name="x", description="", execute=lambda state, message: None)
    with pytest.raises(HandlerError, match="execute must be a function"):
        define_handler(name="x", description="Does.", execute=None)
    with pytest.raises(HandlerError, match="not a usable name"):
        define_handler(name="../x", description="Does.", execute=lambda s, m: None)
    with pytest.raises(HandlerError, match="unknown options"):
        define_handler({"description": "Does.", "execute": lambda s, m: None, "args": {}})


async def test_A3_two_handlers_answering_each_other_stop_at_the_step_ceiling(
    world: World,
) -> None:
    """A handler turn is a step of the session (the reference's glossary), so the step
    ceiling ends two handlers that never stop answering each other."""
    world.register(
        define_handler(name="ping", description="Pings.", execute=lambda s, m: "ping"),
        define_handler(name="pong", description="Pongs.", execute=lambda s, m: "pong"),
    )
    world.define(_agent(SideConfig(handler="ping"), SideConfig(handler="pong")))

    thread, result = await world.chat("go")

    assert (result.stop_reason, result.steps) == ("max_total_steps", 250)
    said = [content for _, _, content in await _said(world, thread.id)]
    assert said == ["go"] + ["ping", "pong"] * 125
