"""Two paths into the engine that used to bypass redaction: queued messages drained into a
running session, and ``state.invoke_tool`` results handed back to the calling tool."""

from __future__ import annotations

import json
from typing import Any

from runtime.core.messages import new_id
from runtime.core.redaction import Redactor
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import QueuedMessage
from runtime.tools.registry import define_tool
from tests.runtime.conftest import Harness, World, agent, prompt

SECRET = "sk-gap-canary-Qw8/+e?r=2&t"
INSTANCE_MARK = "[REDACTED]"  # an instance secret is not named to the thread's user


def _leaks(value: Any) -> bool:
    dumped = json.dumps(value, default=lambda o: getattr(o, "__dict__", None) or repr(o))
    return Redactor([("API_KEY", SECRET)]).contains(dumped + repr(value))


async def test_drained_queued_messages_are_redacted(world: World, harness: Harness) -> None:
    @define_tool("Meanwhile the user sends a message (queued by the API)")
    async def wait(state: Any) -> str:
        row = QueuedMessage(id=new_id(), content=f"here is my key {SECRET}")
        await world.store.queue_message(state.thread_id, row)
        return "waited"

    harness.set_instance_env("API_KEY", SECRET)
    world.register(wait)
    world.define(prompt(tools=["wait"]), agent())
    world.script("m", TestScript().add_tool_call("wait").add_text("ok"))
    thread, _ = await world.chat("start")
    messages = await world.messages(thread.id)
    assert [m.content for m in messages][3] == f"here is my key {INSTANCE_MARK}"
    assert not _leaks(messages), "stored message"
    assert not _leaks(world.requests()[1].messages), "transcript sent to the model"
    assert not _leaks(world.sink.frames[thread.id]), "frames"


async def test_invoke_tool_results_are_redacted_for_the_caller(
    world: World, harness: Harness
) -> None:
    seen: list[Any] = []

    @define_tool("Reads the key")
    async def reveal(state: Any) -> str:
        return f"key={await state.env('API_KEY')}"

    @define_tool("Calls another tool directly")
    async def caller(state: Any) -> str:
        result = await state.invoke_tool("reveal", {})
        seen.append(result)
        return "called"

    harness.set_instance_env("API_KEY", SECRET)
    world.register(reveal, caller)
    world.define(prompt(tools=["caller", "reveal"]), agent())
    world.script("m", TestScript().add_tool_call("caller").add_text("ok"))
    await world.chat("go")
    assert seen and seen[0].result == f"key={INSTANCE_MARK}"
    assert not _leaks(seen)
