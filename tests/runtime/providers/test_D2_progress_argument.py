"""Issue #54, row D2 (spec 0.2.0 ``progressArgument``): a tool names one argument, and
``tool_call_started`` fires while the model still streams the call, as soon as that argument
is complete, carrying it as ``progress``; once per call.

The vendor is the replay server on 127.0.0.1 serving a recorded OpenAI Chat Completions
stream (``openai/chat_stream_tool_call_roundtrip.yaml``: ``multiply`` with ``{"a":1231,
"b":2331}`` in eleven argument fragments), so the argument deltas arrive as a real vendor
sends them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.spec import ModelDefinition
from runtime.extend import define_tool as public_define_tool
from runtime.providers.registry import install
from runtime.providers.test_provider import TestScript
from runtime.step.tool_progress import completed_argument
from runtime.tools.registry import RegistryError, define_hook, define_tool
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY

CALL_ID = "call_1EYWDzueHEp8OsB8jJSEp7WB"


class MultiplyArgs(BaseModel):
    a: int
    b: int


def _multiply(progress_argument: str | None) -> Any:
    async def multiply(state: Any, args: MultiplyArgs) -> str:
        RAN.append(args.a * args.b)
        return str(args.a * args.b)

    return define_tool(
        "Multiply two numbers.", MultiplyArgs, multiply, progress_argument=progress_argument
    )


RAN: list[int] = []


def _replayed(world: World, replay: Any, client: Any, tool: Any) -> list[tuple[Any, ...]]:
    """The recorded round trip as the vendor; a ``tool_call_started`` hook that records what
    it received and whether the tool had run yet."""
    RAN.clear()
    seen: list[tuple[Any, ...]] = []

    async def watch(state: Any, tool_call: Any, progress: Any) -> None:
        seen.append((tool_call["id"], tool_call["function"]["arguments"], progress, len(RAN)))

    for interaction in recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml"):
        replay.queue(interaction.reply(chunk_size=97))
    install(world.providers, client, environ={"OPENAI_API_KEY": PLANTED_KEY})
    world.register(tool, define_hook("tool_call_started", watch, id="watch"))
    world.define(
        ModelDefinition(
            name="m", provider="openai", model="gpt-4o-mini", base_url=replay.url + "/v1"
        ),
        prompt(tools=["multiply"], hooks=["watch"]),
        agent(),
    )
    return seen


async def test_D2_tool_call_started_fires_while_the_arguments_stream_with_the_progress(
    world: World, replay: Any, client: Any
) -> None:
    seen = _replayed(world, replay, client, _multiply("a"))

    thread, result = await world.chat("What is 1231 * 2331?")

    assert result.final_text and RAN == [1231 * 2331]
    [(call_id, arguments_then, progress, ran_before)] = seen  # once per call
    assert (call_id, progress, ran_before) == (CALL_ID, 1231, 0)
    # It fired mid-stream: "a" was complete, "b" not streamed yet (not even parseable JSON).
    assert arguments_then.startswith('{"a":1231') and '"b":2331' not in arguments_then
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments_then)
    [event] = world.sink.events(thread.id, "tool_call_started")  # not again at run start
    assert event["data"] == {"id": CALL_ID, "name": "multiply", "progress": 1231}
    # The stored call has the whole arguments.
    [assistant] = [m for m in await world.messages(thread.id) if m.tool_calls]
    assert json.loads(assistant.tool_calls[0]["function"]["arguments"]) == {"a": 1231, "b": 2331}


async def test_D2_the_last_argument_fires_once_the_arguments_are_whole(
    world: World, replay: Any, client: Any
) -> None:
    seen = _replayed(world, replay, client, _multiply("b"))

    thread, _ = await world.chat("What is 1231 * 2331?")

    [(_, arguments_then, progress, ran_before)] = seen
    assert (progress, ran_before) == (2331, 0)  # before the tool ran
    assert json.loads(arguments_then) == {"a": 1231, "b": 2331}
    [event] = world.sink.events(thread.id, "tool_call_started")
    assert event["data"]["progress"] == 2331


async def test_D2_a_tool_without_one_keeps_firing_as_it_starts_to_run(
    world: World, replay: Any, client: Any
) -> None:
    seen = _replayed(world, replay, client, _multiply(None))

    thread, _ = await world.chat("What is 1231 * 2331?")

    [(_, arguments_then, progress, ran_before)] = seen
    assert (progress, ran_before) == (None, 0)
    assert json.loads(arguments_then) == {"a": 1231, "b": 2331}
    [event] = world.sink.events(thread.id, "tool_call_started")
    assert event["data"] == {"id": CALL_ID, "name": "multiply"}  # the shape before 0.2.0


async def test_D2_the_scripted_provider_sends_the_progress_too(world: World) -> None:
    """One delta with the whole arguments (as the ``test`` provider and some vendors send)."""
    RAN.clear()
    seen: list[Any] = []

    async def watch(state: Any, tool_call: Any, progress: Any) -> None:
        seen.append(progress)

    world.register(_multiply("a"), define_hook("tool_call_started", watch, id="watch"))
    world.define(prompt(tools=["multiply"], hooks=["watch"]), agent())
    world.script("m", TestScript().add_tool_call("multiply", {"a": 6, "b": 7}).add_text("42"))

    thread, result = await world.chat("6 * 7?")

    assert result.final_text == "42" and seen == [6] and RAN == [42]
    assert [e["data"]["progress"] for e in world.sink.events(thread.id, "tool_call_started")] == [6]


def test_D2_define_tool_takes_it_in_both_forms_and_refuses_an_unknown_argument() -> None:
    async def multiply(state: Any, args: MultiplyArgs) -> str:
        return ""

    assert (
        public_define_tool("M", MultiplyArgs, multiply, progress_argument="b").progress_argument
        == "b"
    )
    as_object = public_define_tool(
        {"description": "M", "args": MultiplyArgs, "execute": multiply, "progressArgument": "a"}
    )
    assert as_object.progress_argument == "a"
    with pytest.raises(RegistryError) as refused:
        define_tool("M", MultiplyArgs, multiply, progress_argument="c")
    assert str(refused.value) == (
        "define_tool multiply: progress_argument 'c' is not one of the tool's arguments "
        "(it has: a, b)."
    )


@pytest.mark.parametrize(
    ("streamed", "expected"),
    [
        ('{"a": "hel', (False, None)),  # a string without its closing quote may grow
        ('{"a": "hello"', (True, "hello")),
        ('{"a": 12', (False, None)),  # a number may grow
        ('{"a": 12, "', (True, 12)),  # the next argument began
        ('{"a": {"x": 1', (False, None)),
        ('{"a": {"x": 1,', (False, None)),  # a comma inside the object
        ('{"a": [1, 2], "', (False, None)),  # waits for the next argument's value
        ('{"a": [1, 2], "b": 1', (True, [1, 2])),
        ('{"a": {"x": 1}}', (True, {"x": 1})),
        ('{"a": tr', (False, None)),
        ('{"a": true', (True, True)),
        ('{"b": 1, "a": null', (True, None)),
        ('{"b": 1', (False, None)),
        ("", (False, None)),
        ("[1, 2", (False, None)),
    ],
)
def test_D2_when_an_argument_is_complete(streamed: str, expected: tuple[bool, Any]) -> None:
    assert completed_argument(streamed, "a") == expected
