"""An MCP server's question to the person (issue #57): the test server's ``book`` tool asks
which seat (elicitation; ``input_required`` on MCP 2026-07-28). The call waits durably (the
session parks, a ``tool_wait`` of kind ``input`` holds the question and the server's
``request_state``), the question is read and answered over the API, and the resumed call
sends the answer back: the server's result says what it received. Declining and cancelling
reach the server too; answers outside the server's schema are refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import Message, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.threads import messages as message_service
from runtime.mcp.client import POOL
from runtime.mcp.servers import wire_name
from tests.agents_app.api.api_support import _api_hosts, client_for, scripted_model  # noqa: F401
from tests.agents_app.api.door_mcp import traveller_agent
from tests.mcp_servers.processes import HttpMcpServer

pytestmark = [pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer().start()
    yield server
    server.stop()


def _define(server: HttpMcpServer, ops: Any) -> None:
    traveller_agent(server, ops)


async def _run(thread: Any) -> None:
    session = await sync_to_async(
        ThreadSession.objects.filter(thread=thread, status=ThreadSession.Status.QUEUED).get
    )()
    try:
        await run_session_job(str(session.pk))
    finally:
        await POOL.aclose()


async def _asked(http_server: HttpMcpServer, ops: Any, alice: Any) -> tuple[Any, Message]:
    await sync_to_async(_define)(http_server, ops)
    thread = await sync_to_async(thread_create)(user=alice, agent_name="traveller")
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content="go")
    await _run(thread)
    row = await sync_to_async(Message.objects.get)(thread=thread, role="tool")
    return thread, row


def _tool_text(thread: Any) -> Message:
    return Message.objects.get(thread=thread, role="tool")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_an_mcp_servers_question_waits_for_the_person_and_the_answer_reaches_it(
    http_server: HttpMcpServer, ops: Any, alice: Any, bob: Any
) -> None:
    thread, row = await _asked(http_server, ops, alice)
    assert row.status == "pending"
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    assert session.status == ThreadSession.Status.PARKED
    api = await sync_to_async(client_for)(alice)
    pending = await sync_to_async(api.get)(f"/api/threads/{thread.pk}/pending-tool-calls")
    [waiting] = pending.json()["pending"]
    assert waiting["kind"] == "input" and waiting["message_id"] == str(row.pk)
    url = f"/api/threads/{thread.pk}/inputs/{row.pk}"
    asked = (await sync_to_async(api.get)(url)).json()
    [question] = asked["questions"]
    assert question["message"] == "Which seat on flight LH400?"
    assert set(question["schema"]["properties"]) == {"seat", "window"}
    assert asked["status"] == "pending" and asked["tool"] == wire_name("air", "book")

    # Another person may not answer; answers outside the server's schema are refused.
    other = await sync_to_async(client_for)(bob)
    assert (await sync_to_async(other.post_json)(url, {"action": "decline"})).status_code == 403
    for body, words in [
        ({"action": "maybe"}, "action must be"),
        ({"action": "accept", "content": {"row": 3}}, "not asked for by the server: row"),
        ({"action": "accept", "content": {"window": True}}, "required by the server: seat"),
        ({"action": "accept", "content": {"seat": 12}}, "seat must be a string"),
        ({"action": "decline", "content": {"seat": "1A"}}, "only with action accept"),
    ]:
        refused = await sync_to_async(api.post_json)(url, body)
        assert refused.status_code == 400 and words in refused.json()["error"], refused.json()

    answered = await sync_to_async(api.post_json)(
        url, {"action": "accept", "content": {"seat": "12A", "window": True}}
    )
    assert answered.status_code == 200 and answered.json()["status"] == "resumed"
    assert (await sync_to_async(api.post_json)(url, {"action": "cancel"})).status_code == 409
    await _run(thread)
    done = await sync_to_async(_tool_text)(thread)
    assert done.tool_status == "success"
    assert done.content == "Booked seat 12A (a window) on LH400."
    assert (await sync_to_async(api.get)(url)).json()["status"] == "accepted"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_question_reaches_the_server(
    action: str, http_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    thread, row = await _asked(http_server, ops, alice)
    api = await sync_to_async(client_for)(alice)
    url = f"/api/threads/{thread.pk}/inputs/{row.pk}"
    assert (await sync_to_async(api.post_json)(url, {"action": action})).status_code == 200
    await _run(thread)
    done = await sync_to_async(_tool_text)(thread)
    assert done.content == f"Not booked: the person chose {action}."


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_the_generic_tool_result_route_names_the_inputs_route(
    http_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    thread, row = await _asked(http_server, ops, alice)
    api = await sync_to_async(client_for)(alice)
    refused = await sync_to_async(api.post_json)(
        f"/api/threads/{thread.pk}/tool-result", {"tool_call_id": "c1", "approve": True}
    )
    assert refused.status_code == 400
    assert f"/inputs/{row.pk}" in refused.json()["error"]
