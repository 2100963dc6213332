"""Issue #54, row D4 (spec 0.2.0 ``generation`` event): while a reply streams, an event
``generation {outputTokens}`` reports an estimate (four characters a token) every 80
streamed characters, tool-call argument deltas included; live only, never stored.

The vendor is the replay server on 127.0.0.1 serving the recorded OpenAI Chat Completions
stream (``openai/chat_stream_tool_call_roundtrip.yaml``). Its call has 21 characters of
arguments, so ``long_call`` keeps every recorded frame (ids, usage chunk, ``[DONE]``) but
names a ``note`` tool and streams a 400-character argument in fifty recorded-shape
argument frames of eight characters each.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from runtime.core.spec import ModelDefinition
from runtime.providers.registry import install
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY

CASSETTE = "openai/chat_stream_tool_call_roundtrip.yaml"
# 9 + 389 + 2 = 400 characters: reports at 80, 160, 240, 320 and 400 characters.
LONG_TEXT = ("The quick brown fox jumps over the lazy dog. " * 9)[:389]
LONG_ARGUMENTS = json.dumps({"text": LONG_TEXT}, separators=(",", ":"))
FRAGMENT = 8


class NoteArgs(BaseModel):
    text: str


NOTES: list[str] = []


@define_tool("Keep a note.", NoteArgs)
async def note(state: Any, args: NoteArgs) -> str:
    NOTES.append(args.text)
    return "noted"


def long_call(call: recordings.Interaction) -> recordings.Interaction:
    """The recorded tool-call stream with the ``note`` tool and ``LONG_ARGUMENTS``."""
    lines = call.body.decode().split("\n\n")
    start, *rest = [line for line in lines if line]
    template = next(line for line in rest if '"arguments":"a"' in line)
    kept = [line for line in rest if '"arguments"' not in line]
    fragments = [
        template.replace(
            '"arguments":"a"',
            '"arguments":' + json.dumps(LONG_ARGUMENTS[i : i + FRAGMENT]),
        )
        for i in range(0, len(LONG_ARGUMENTS), FRAGMENT)
    ]
    body = "\n\n".join([start.replace('"multiply"', '"note"'), *fragments, *kept]) + "\n\n"
    return recordings.Interaction(call.uri, None, call.status, call.headers, body.encode())


def replayed(world: World, replay: Any, client: Any) -> None:
    """The long call, then the recorded text reply (56 characters: below one report)."""
    NOTES.clear()
    call, text = recordings.cassette(CASSETTE)[:2]
    replay.queue(long_call(call).reply(chunk_size=97), text.reply(chunk_size=97))
    install(world.providers, client, environ={"OPENAI_API_KEY": PLANTED_KEY})
    world.register(note)
    world.define(
        ModelDefinition(
            name="m", provider="openai", model="gpt-4o-mini", base_url=replay.url + "/v1"
        ),
        prompt(tools=["note"]),
        agent(),
    )


async def test_D4_generation_reports_every_80_characters_of_a_long_tool_argument(
    world: World, replay: Any, client: Any
) -> None:
    replayed(world, replay, client)

    thread, result = await world.chat("Note the fox.")

    assert result.final_text and NOTES == [LONG_TEXT]
    assert len(LONG_ARGUMENTS) == 400
    events = world.sink.events(thread.id, "generation")
    # Growing, four characters a token; the 56-character text reply (a new request, counted
    # from zero) stays under a report.
    assert [e["data"] for e in events] == [{"outputTokens": n} for n in (20, 40, 60, 80, 100)]
    frames = world.sink.frames[thread.id]
    # Reported while the arguments streamed: before the call was stored or started to run.
    first_tool = next(i for i, f in enumerate(frames) if f.get("type") == "tool_started")
    assert all(frames.index(e) < first_tool for e in events)
    assert all(
        frames.index(e) < i
        for i, f in enumerate(frames)
        if f.get("type") == "message_data" and f["data"].get("tool_calls")
        for e in events
    )


async def test_D4_generation_events_are_not_stored(world: World, replay: Any, client: Any) -> None:
    replayed(world, replay, client)

    thread, _ = await world.chat("Note the fox.")

    assert world.sink.events(thread.id, "generation")
    stored = json.dumps([m.content for m in await world.messages(thread.id)])
    assert "outputTokens" not in stored and "generation" not in stored
