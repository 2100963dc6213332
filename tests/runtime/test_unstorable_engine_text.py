"""Text the engine stores itself (model output, tool calls and results, values and file
metadata set by tools, logs) never holds NUL or a lone surrogate: PostgreSQL refuses both,
so one would kill the session at its commit. They become U+FFFD (runtime/store/storable.py).
Runs over the in-memory store and, from tests/agents_app/bridge/engine_on_django, over PostgreSQL.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

BAD = "bad\ud800text\x00end"
CLEAN = "bad\ufffdtext\ufffdend"


class NoteArgs(BaseModel):
    note: str


@define_tool("Store a note and answer with broken text", NoteArgs)
async def broken_note(state: Any, args: NoteArgs) -> str:
    await state.set_value("note", {"text": args.note, "k\ud800": [BAD]})
    await state.write_file("/notes.txt", "hi", "text/plain", metadata={"by": BAD})
    return f"noted {BAD}"


@define_tool("Write a file whose name has a lone surrogate", NoteArgs)
async def broken_path(state: Any, args: NoteArgs) -> str:
    await state.write_file("/a\ud800.txt", "hi", "text/plain")
    return "written"


def _has_unstorable(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=True)
    return "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text)


async def test_unstorable_text_from_model_and_tools_is_replaced_and_the_session_completes(
    world: World,
) -> None:
    world.register(broken_note)
    world.define(prompt(tools=["broken_note"]), agent())
    world.script(
        "m", TestScript().add_tool_call("broken_note", {"note": BAD}).add_text(f"done {BAD}")
    )
    thread, result = await world.chat("go")
    assert result.stop_reason == "stop_on_response", result

    rows = await world.messages(thread.id)
    [call] = [m for m in rows if m.tool_calls]
    assert not _has_unstorable(call.tool_calls)  # JSON escapes in the arguments are fine
    [tool] = [m for m in rows if m.role == "tool"]
    assert tool.content == f"noted {CLEAN}" and tool.tool_status == "success"
    assert rows[-1].role == "assistant" and rows[-1].content == f"done {CLEAN}"
    assert not any(_has_unstorable([m.content, m.tool_calls]) for m in rows)

    value = await world.store.get_value(thread.id, "note")
    assert value == {"text": CLEAN, "k\ufffd": [CLEAN]}
    stat = await world.store.stat_file(thread.id, "/notes.txt")
    assert stat is not None and stat.metadata == {"by": CLEAN}
    logs = await world.store.list_logs(thread.id, LogQuery(limit=100, offset=0, order="asc"))
    assert logs and not _has_unstorable([log.response_body for log in logs])


async def test_a_file_name_with_a_lone_surrogate_is_a_tool_error_not_a_dead_session(
    world: World,
) -> None:
    world.register(broken_path)
    world.define(prompt(tools=["broken_path"]), agent())
    world.script("m", TestScript().add_tool_call("broken_path", {"note": "x"}).add_text("ok"))
    thread, result = await world.chat("go")
    assert result.stop_reason == "stop_on_response", result
    [tool] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert tool.tool_status == "error" and "surrogate" in (tool.content or "")
