"""A 2025-era MCP server's question in the middle of a call (issue #57): the test server,
serving only the 2025 revisions (a stateful ``initialize`` session), has a ``seat`` tool that
asks with the 2025 API (``ctx.elicit``: an ``elicitation/create`` request while the call is
open). The call is held: its result row waits ``pending`` with a ``tool_wait`` of kind
``input`` marked ``live``, read and answered over the same API as a parked question, and the
running session sends the answer on; the server's result says what it received. Declining,
expiry (``cancel``), other people, two calls asking at once on one connection, and a call
where nobody can answer are covered too; ``test_mcp_elicitation.py`` keeps the 2026-07-28
(``input_required``) flow.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async

from agents_app.models import McpServer, Message, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.mcp_servers import mcp_server_refresh
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.mcp import servers
from runtime.mcp.client import NOBODY_TO_ASK, POOL
from runtime.mcp.servers import wire_name
from tests.agents_app.api.api_support import _api_hosts, client_for, scripted_model  # noqa: F401
from tests.mcp_servers.processes import HttpMcpServer

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]
SEAT = wire_name("air", "seat")
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def old_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer(era="2025").start()
    yield server
    server.stop()


def _call(call_id: str, flight: str, **more: Any) -> dict[str, Any]:
    return {"name": SEAT, "arguments": {"flight": flight, **more}, "id": call_id}


def _define(server: HttpMcpServer, ops: Any, calls: list[dict[str, Any]]) -> None:
    row = McpServer.objects.create(name="air", url=server.url)
    mcp_server_refresh(server=row, user=ops)
    model = scripted_model(
        "m", [{"toolCalls": calls, "finishReason": "tool_calls"}, {"content": "ok"}]
    )
    prompt = PromptDefinition(
        name="p",
        model="m",
        prompt="Book.",
        tools=["mcp:air/seat"],
        parallel_tool_calls=len(calls) > 1,
    )
    agent = AgentDefinition(name="traveller", side_a=SideConfig(prompt="p"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)


async def _start(
    server: HttpMcpServer, ops: Any, alice: Any, calls: list[dict[str, Any]]
) -> tuple[Any, asyncio.Task[None]]:
    """The session runs in the background, as a worker runs it, while the test answers."""
    await sync_to_async(_define)(server, ops, calls)
    thread = await sync_to_async(thread_create)(user=alice, agent_name="traveller")
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content="go")
    session = await sync_to_async(
        ThreadSession.objects.filter(thread=thread, status=ThreadSession.Status.QUEUED).get
    )()
    return thread, asyncio.ensure_future(run_session_job(str(session.pk)))


async def _asked(thread: Any, task: asyncio.Task[None], count: int = 1) -> list[Message]:
    """The call rows waiting for the person, once ``count`` of them are there."""

    def read() -> list[Message]:
        rows = Message.objects.filter(thread=thread, role="tool", status="pending")
        return [r for r in rows.order_by("created_at") if "tool_wait" in r.metadata]

    while len(rows := await sync_to_async(read)()) < count:
        assert not task.done(), "the session ended without asking"
        await asyncio.sleep(0.1)
    return rows


async def _finish(task: asyncio.Task[None]) -> None:
    try:
        await task
    finally:
        await POOL.aclose()


def _tool_rows(thread: Any) -> list[Message]:
    return list(Message.objects.filter(thread=thread, role="tool").order_by("created_at"))


def _session(thread: Any) -> ThreadSession:
    return ThreadSession.objects.get(thread=thread)


def test_the_2025_server_asks_with_elicitation_create_in_the_middle_of_the_call(
    old_server: HttpMcpServer,
) -> None:
    # Raw JSON-RPC, so nothing of ours stands between: the question arrives on the open
    # call's response stream, before its result, and the answer posted back reaches the tool.
    headers = {"Accept": ACCEPT}
    with httpx.Client(timeout=30) as http:
        init = http.post(
            old_server.url,
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"elicitation": {"form": {}}},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
        )
        headers |= {
            "mcp-session-id": init.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        inited = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(old_server.url, headers=headers, json=inited).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "seat", "arguments": {"flight": "LH400"}},
        }
        seen: list[dict[str, Any]] = []
        with http.stream("POST", old_server.url, headers=headers, json=call) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                seen.append(json.loads(line[5:]))
                if seen[-1].get("method") == "elicitation/create":
                    answer = {"action": "accept", "content": {"seat": "3C"}}
                    reply = {"jsonrpc": "2.0", "id": seen[-1]["id"], "result": answer}
                    assert http.post(old_server.url, headers=headers, json=reply).is_success
                if seen[-1].get("id") == 2 and "result" in seen[-1]:
                    break
    asked, done = seen[0], seen[-1]
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["message"] == "Which seat on flight LH400?"
    assert done["result"]["content"][0]["text"] == "Booked seat 3C (an aisle) on LH400."


async def test_a_mid_call_question_is_asked_in_the_chat_and_the_answer_reaches_the_server(
    old_server: HttpMcpServer, ops: Any, alice: Any, charlie: Any
) -> None:
    thread, task = await _start(old_server, ops, alice, [_call("c1", "LH400")])
    [row] = await _asked(thread, task)
    wait = row.metadata["tool_wait"]
    assert wait["kind"] == "input" and wait["live"] is True
    # Held, not parked: the session still runs, and nothing else was stored for the call.
    assert (await sync_to_async(_session)(thread)).status == ThreadSession.Status.RUNNING
    api = await sync_to_async(client_for)(alice)
    pending = await sync_to_async(api.get)(f"/api/threads/{thread.pk}/pending-tool-calls")
    [waiting] = pending.json()["pending"]
    assert waiting["kind"] == "input" and waiting["message_id"] == str(row.pk)
    url = f"/api/threads/{thread.pk}/inputs/{row.pk}"
    asked = (await sync_to_async(api.get)(url)).json()
    [question] = asked["questions"]
    assert question["message"] == "Which seat on flight LH400?"
    assert set(question["schema"]["properties"]) == {"seat", "window"}
    assert asked["status"] == "pending" and asked["tool"] == SEAT

    # Another person can neither read the question nor answer it.
    other = await sync_to_async(client_for)(charlie)
    assert (await sync_to_async(other.get)(url)).status_code in (403, 404)
    refused = await sync_to_async(other.post_json)(url, {"action": "decline"})
    assert refused.status_code in (403, 404)
    bad = await sync_to_async(api.post_json)(url, {"action": "accept", "content": {"seat": 1}})
    assert bad.status_code == 400 and "seat must be a string" in bad.json()["error"]

    answered = await sync_to_async(api.post_json)(
        url, {"action": "accept", "content": {"seat": "12A", "window": True}}
    )
    assert answered.status_code == 200, answered.json()
    await _finish(task)
    [done] = await sync_to_async(_tool_rows)(thread)  # the held row became the result
    assert done.pk == row.pk and done.tool_status == "success"
    assert done.content == "Booked seat 12A (a window) on LH400."
    assert (await sync_to_async(api.get)(url)).json()["status"] == "accepted"
    session = await sync_to_async(_session)(thread)
    assert session.status == ThreadSession.Status.COMPLETED  # one session, never parked


async def test_a_declined_mid_call_question_reaches_the_server(
    old_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    thread, task = await _start(old_server, ops, alice, [_call("c1", "LH400")])
    [row] = await _asked(thread, task)
    api = await sync_to_async(client_for)(alice)
    url = f"/api/threads/{thread.pk}/inputs/{row.pk}"
    assert (await sync_to_async(api.post_json)(url, {"action": "decline"})).status_code == 200
    await _finish(task)
    [done] = await sync_to_async(_tool_rows)(thread)
    assert done.content == "Not booked: the person chose decline."


async def test_a_question_nobody_answers_is_cancelled_at_the_hold_limit(
    old_server: HttpMcpServer, ops: Any, alice: Any, settings: Any
) -> None:
    settings.STUDIO_MCP_LIVE_QUESTION_SECONDS = 1
    thread, task = await _start(old_server, ops, alice, [_call("c1", "LH400")])
    [row] = await _asked(thread, task)
    await _finish(task)
    [done] = await sync_to_async(_tool_rows)(thread)
    assert done.content == "Not booked: the person chose cancel."
    assert done.metadata["tool_wait"]["decision"] == {"type": "expired"}
    api = await sync_to_async(client_for)(alice)
    url = f"/api/threads/{thread.pk}/inputs/{row.pk}"
    assert (await sync_to_async(api.get)(url)).json()["status"] == "expired"
    assert (await sync_to_async(api.post_json)(url, {"action": "cancel"})).status_code == 409


async def test_two_calls_asking_at_once_on_one_connection_are_refused_in_words(
    old_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    # Both calls are in flight before either asks (the server waits for both), and their
    # questions do not say which call they belong to: nobody may be asked.
    group = uuid.uuid4().hex
    calls = [_call(f"c{n}", f"LH40{n}", together=2, group=group) for n in (1, 2)]
    thread, task = await _start(old_server, ops, alice, calls)
    await _finish(task)
    rows = await sync_to_async(_tool_rows)(thread)
    assert len(rows) == 2
    for row in rows:
        assert row.content.startswith("Not booked: Several tool calls are in flight"), row.content
        assert "nobody was asked" in row.content
        assert "tool_wait" not in row.metadata  # no question was ever stored


async def test_two_calls_whose_questions_name_their_call_are_each_asked(
    old_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    group = uuid.uuid4().hex
    calls = [_call(f"c{n}", f"LH40{n}", together=2, group=group, tagged=True) for n in (1, 2)]
    thread, task = await _start(old_server, ops, alice, calls)
    rows = await _asked(thread, task, count=2)
    api = await sync_to_async(client_for)(alice)
    for row in rows:
        flight = row.metadata["tool_wait"]["arguments"]["flight"]
        question = row.metadata["tool_wait"]["input"]["questions"][0]
        assert question["message"] == f"Which seat on flight {flight}?"  # its own call's
        seat = {"LH401": "1A", "LH402": "2B"}[flight]
        url = f"/api/threads/{thread.pk}/inputs/{row.pk}"
        body = {"action": "accept", "content": {"seat": seat}}
        assert (await sync_to_async(api.post_json)(url, body)).status_code == 200
    await _finish(task)
    by_call = {r.tool_call_id: r.content for r in await sync_to_async(_tool_rows)(thread)}
    assert by_call == {
        "c1": "Booked seat 1A (an aisle) on LH401.",
        "c2": "Booked seat 2B (an aisle) on LH402.",
    }


async def test_where_nobody_can_answer_the_question_is_refused_in_words(
    old_server: HttpMcpServer,
) -> None:
    # What a sub-prompt or invoke_tool does: the call has no one to ask.
    server = servers.McpServer.model_validate(old_server.definition("air").model_dump())

    async def no_env(name: str) -> str | None:
        return None

    try:
        result = await POOL.call(
            server, "seat", {"flight": "LH400"}, call_id="c1", env=no_env, ask=None
        )
    finally:
        await POOL.aclose()
    assert result.content == f"Not booked: {NOBODY_TO_ASK}"


async def test_stop_while_the_question_is_held_ends_the_call(
    old_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    thread, task = await _start(old_server, ops, alice, [_call("c1", "LH400")])
    [row] = await _asked(thread, task)
    api = await sync_to_async(client_for)(alice)
    assert (await sync_to_async(api.post)(f"/api/threads/{thread.pk}/stop")).status_code == 200
    await _finish(task)  # at once: not after the hold limit (300 s, past this test's timeout)
    [done] = await sync_to_async(_tool_rows)(thread)
    assert done.pk == row.pk and done.content == "Execution stopped by user"
    assert done.metadata["tool_wait"]["decision"] == {"type": "stopped"}
