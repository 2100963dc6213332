"""The canary: a distinctive secret planted at instance, thread and agent scope must appear
nowhere the studio keeps or shows things, after a session in which a tool returns it (raw
and base64) and the model repeats it.

Searched: every column of every row of every table (raw SQL; only
``agents_app_envvalue.ciphertext`` is exempt: it *is* the encrypted secret), the
captured application logs, every emitted frame, and an ``export_definitions`` dump.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from agents_app.models import Agent, EnvValue
from runtime.core.redaction import Redactor
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.agents_app.bridge.engine_on_django.conftest import *  # noqa: F403  (store, harness over Django)
from tests.runtime.conftest import Harness, World, agent, prompt

INSTANCE_SECRET = "canary-INSTANCE-7f3a9e21c4"
THREAD_SECRET = "canary-THREAD-0b8d5c6e2f"
AGENT_SECRET = "canary-AGENT-91aa04c7e3"
CANARIES = Redactor(
    [("I", INSTANCE_SECRET), ("T", THREAD_SECRET), ("A", AGENT_SECRET)]
)  # also finds base64, URL and JSON forms
EXEMPT = {("agents_app_envvalue", "ciphertext")}


@define_tool("Returns the secrets, raw and base64")
async def reveal(state: Any) -> str:
    found = [await state.env("CANARY"), await state.env("THREAD_CANARY")]
    state.emit("revealed", {"values": found})
    logging.getLogger("runtime.loop.session").warning("tool saw %s", found)
    encoded = [base64.b64encode(v.encode()).decode() for v in found]
    return json.dumps({"raw": found, "b64": encoded})


def _db_hits() -> list[str]:
    hits: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            columns = [
                c.name for c in connection.introspection.get_table_description(cursor, table)
            ]
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if (table, column) in EXEMPT or value is None:
                        continue
                    text = (
                        bytes(value).decode("latin-1")
                        if isinstance(value, bytes | memoryview)
                        else None
                    )
                    text = text if text is not None else str(value)
                    if CANARIES.contains(text):
                        hits.append(f"{table}.{column}")
    return hits


@pytest.fixture
def planted(harness: Harness, world: World) -> World:
    harness.set_instance_env("CANARY", INSTANCE_SECRET)
    world.register(reveal)
    world.define(
        prompt(
            text=[{"type": "text", "content": "Key: "}, {"type": "env", "property": "CANARY"}],
            tools=["reveal"],
        ),
        agent(),
    )
    row = EnvValue(scope=EnvValue.Scope.AGENT, agent=Agent.objects.get(name="agent"), key="AK")
    row.value = AGENT_SECRET
    row.save()
    reply = f"Here: {INSTANCE_SECRET} / {THREAD_SECRET} / {AGENT_SECRET}"
    world.script("m", TestScript().add_tool_call("reveal").add_text(reply).with_streaming(5))
    return world


async def test_planted_secrets_leave_no_trace(
    planted: World, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    world = planted
    thread = await world.thread(env={"THREAD_CANARY": THREAD_SECRET})
    result = await world.run(thread.id, "show me")
    assert result.stop_reason == "stop_on_response"
    # The canary did travel: to the provider (system prompt) and into the tool's result.
    assert INSTANCE_SECRET in world.requests()[0].system
    # Instance and agent secrets are not the user's: marked without their names.
    assert "[REDACTED]" in json.dumps(world.requests()[1].messages)
    assert "[REDACTED:CANARY]" not in json.dumps(world.requests()[1].messages)

    assert _db_hits() == []
    assert not CANARIES.contains(caplog.text)
    assert not CANARIES.contains(json.dumps(world.sink.frames[thread.id], default=str))
    streamed = "".join(f["chunk"] for f in world.sink.of_type(thread.id, "message_chunk"))
    assert streamed == "Here: [REDACTED] / [REDACTED:THREAD_CANARY] / [REDACTED]"

    call_command("export_definitions", str(tmp_path))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert not CANARIES.contains(path.read_text(errors="replace")), path
