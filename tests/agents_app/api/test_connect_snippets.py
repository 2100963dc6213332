"""The Connect page's snippets (``pages.agent_connect``) work as pasted: each is run, as the
page shows it, by ``bash`` (curl) or Python (the ``openai`` package) against a live server
(``door_server``), with the key only in the environment variable the snippets name."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from agents_app.models import Agent, Thread
from agents_app.models import Message as Row
from agents_app.pages.agent_connect import KEY_VARIABLE, agent_doors
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)
from tests.agents_app.api.test_five_doors import mcp_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

ANSWER = "Hello from the scripted agent."


def _run(argv: list[str], key: str) -> str:
    env = {"PATH": os.environ["PATH"], KEY_VARIABLE: key}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_snippet_reaches_the_agent_as_pasted(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": ANSWER, "expectInput": {"containsMessage": "Hello!"}}])
    Agent.objects.filter(name="helper").update(expose_as_tool=True)
    _, key = api_key_create(user=alice, name="snippets")
    doors = {d.slug: d for d in agent_doors(base_url=server, agent="helper", exposed_as_tool=True)}
    assert all(key not in d.snippet for d in doors.values())

    assert ANSWER in _run([sys.executable, "-c", doors["openai"].snippet], key)
    a2a = json.loads(_run(["bash", "-c", doors["a2a"].snippet], key))
    assert a2a["result"]["status"]["state"] == "completed", a2a
    assert ANSWER in json.dumps(a2a["result"]["artifacts"])
    events = _run(["bash", "-c", doors["ag-ui"].snippet], key)
    deltas = [
        json.loads(line.removeprefix("data: "))
        for line in events.splitlines()
        if line.startswith("data: ")
    ]
    assert (
        "".join(e.get("delta", "") for e in deltas if e["type"] == "TEXT_MESSAGE_CONTENT") == ANSWER
    )

    _run(["bash", "-c", doors["thread-api"].snippet], key)
    # The snippet reads the messages right after posting; the answer may come a moment later.
    deadline = time.monotonic() + 20
    newest = Thread.objects.filter(owner=alice).order_by("-created_at").first()
    assert newest is not None
    while not Row.objects.filter(thread=newest, role="assistant", content=ANSWER).exists():
        assert time.monotonic() < deadline, "the thread API snippet's message got no answer"
        time.sleep(0.1)
    assert Thread.objects.filter(owner=alice, agent__name="helper").count() == 4

    config = json.loads(doors["mcp"].snippet)["mcpServers"]["studio"]
    assert config["headers"] == {"Authorization": f"Bearer ${{{KEY_VARIABLE}}}"}

    async def mcp() -> str:
        async with mcp_session(config["url"].removesuffix("/mcp"), key) as session:
            result = await session.call_tool("helper", {"message": "Hello!"})
        return str(result.content[0].text)  # type: ignore[union-attr]

    assert asyncio.run(mcp()) == ANSWER
