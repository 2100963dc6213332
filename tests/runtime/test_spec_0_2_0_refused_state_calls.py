"""Issue #54, rows E5 and E6 (spec 0.2.0): ``state.call_client``/``call_client_stream``
(the reference's ``callClient``/``callClientStream``/``runtimeStreams``) and
``state.run_agent`` (``runAgent``) exist and are refused in words. A tool that calls one
fails with the sentence, which is what the model reads as the call's result; nothing else
runs (no second agent, no client request). The store plays no part, so the in-memory one
is enough.
"""

from __future__ import annotations

from typing import Any

from runtime.core.not_ours import CALL_CLIENT_TEXT, RUN_AGENT_TEXT
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


@define_tool("Starts another agent on this thread.")
async def start_billing(state: Any) -> str:
    await state.run_agent("billing")
    return "started"


@define_tool("Asks the client to open a file.")
async def open_in_editor(state: Any) -> str:
    return str(await state.call_client("open_file", {"path": "/a.txt"}, timeout_ms=5000))


@define_tool("Streams bytes to the client.")
async def stream_to_client(state: Any) -> str:
    return str(await state.call_client_stream("tail", {"path": "/log"}))


async def _tool_result(world: World, tool: str) -> tuple[str, Any]:
    world.register(start_billing, open_in_editor, stream_to_client)
    world.define(prompt(tools=[tool]), agent())
    world.script("m", TestScript().add_tool_call(tool).add_text("done"))
    thread, _ = await world.chat("go")
    [row] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    # What the model read as the call's result in its next request.
    received = world.requests()[1].messages[-1]
    assert received["content"] == row.content
    return str(row.content), row


async def test_E6_a_tool_calling_run_agent_gets_the_sentence_and_no_agent_runs(
    world: World,
) -> None:
    content, row = await _tool_result(world, "start_billing")

    assert row.tool_status == "error"
    assert RUN_AGENT_TEXT.format(agent="billing") in content
    assert "runs one agent" in content and "subagent_create" in content
    assert len(world.requests()) == 2  # the agent's own two steps, nothing else was asked


async def test_E5_a_tool_calling_call_client_gets_the_sentence_naming_client_true(
    world: World,
) -> None:
    content, row = await _tool_result(world, "open_in_editor")

    assert row.tool_status == "error"
    assert CALL_CLIENT_TEXT.format(method="call_client") in content
    assert "client: true" in content


async def test_E5_call_client_stream_is_refused_in_the_same_words(world: World) -> None:
    content, _ = await _tool_result(world, "stream_to_client")

    assert CALL_CLIENT_TEXT.format(method="call_client_stream") in content
    assert "byte streams" in content
