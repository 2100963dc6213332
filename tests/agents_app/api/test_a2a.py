"""The A2A door (``/a2a``, docs/api.md "A2A"), called the way other agents call it: the
a2a-sdk's own client (protocol 1.0, JSON-RPC) against a real server.

A uvicorn server in a thread of this process (``door_server``) serves
``studio.asgi.application`` (the production composition) on the test's database, as
``test_openai_compat`` does; sessions run on its loop (the in-process executor). The agents are scripted (the ``test`` provider).
alice and bob are plain users.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError, AgentCardResolutionError
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotCancelableError, TaskNotFoundError
from django.contrib.auth.models import Group
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value
from pydantic import BaseModel

from agents_app.base.code_registry import reset_registry
from agents_app.models import Agent, SpendBudget, Thread, ThreadSession, UsageLimit
from agents_app.models import Message as Row
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.definitions.saves import save_definitions
from runtime.core import waits
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig, ToolConfig
from runtime.mcp.servers import wire_name
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import define_agent, scripted_model
from tests.agents_app.api.door_mcp import *  # noqa: F403  (fixture: air_server)
from tests.agents_app.api.door_mcp import BOOKED, QUESTION, traveller_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)
from tests.mcp_servers.processes import HttpMcpServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WAIT = 20  # seconds a client waits for one answer here


def key_of(user: Any) -> str:
    _, raw = api_key_create(user=user, name=f"a2a key of {user.username}")
    return raw


def _http(key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=WAIT)


async def _client(server: str, key: str, agent: str, *, streaming: bool = False) -> Any:
    """The SDK's client, its card resolved from the agent's URL (with the key: cards need it)."""
    config = ClientConfig(httpx_client=_http(key), streaming=streaming)
    return await ClientFactory(config).create_from_url(f"{server}/a2a/{agent}")


def _request(text: str, *, context_id: str = "", task_id: str = "") -> SendMessageRequest:
    message = Message(
        message_id=f"m-{time.monotonic_ns()}",
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )
    return SendMessageRequest(message=message)


async def _send(server: str, key: str, agent: str, text: str, **kw: Any) -> Task:
    client = await _client(server, key, agent)
    try:
        [event] = [e async for e in client.send_message(_request(text, **kw))]
    finally:
        await client.close()
    assert event.HasField("task"), event
    return event.task


async def _events(server: str, key: str, agent: str, text: str, **kw: Any) -> list[StreamResponse]:
    client = await _client(server, key, agent, streaming=True)
    try:
        return [e async for e in client.send_message(_request(text, **kw))]
    finally:
        await client.close()


def _text(task: Task, artifact: str = "answer") -> str:
    found = [a for a in task.artifacts if a.name == artifact]
    assert found, [a.name for a in task.artifacts]
    return "".join(p.text for p in found[0].parts)


def _transcript(thread: Thread) -> list[tuple[str, str]]:
    rows = Row.objects.filter(thread=thread, depth=0).order_by("created_at")
    return [(m.role, m.content or "") for m in rows]


# --- the card -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("_notes_tool")
def test_the_card_names_the_agent_its_skills_its_endpoint_and_the_bearer_scheme(
    server: str, alice: Any
) -> None:
    _approval_agent()
    key = key_of(alice)

    async def resolve() -> Any:
        async with _http(key) as http:
            return await A2ACardResolver(http, f"{server}/a2a/notes").get_agent_card()

    card = asyncio.run(resolve())
    assert card.name == "notes" and card.description == "Keeps notes."
    [interface, legacy] = card.supported_interfaces
    assert interface.url == f"{server}/a2a/notes"
    assert (interface.protocol_binding, interface.protocol_version) == ("JSONRPC", "1.0")
    assert legacy.protocol_version == "0.3"
    assert card.capabilities.streaming and not card.capabilities.push_notifications
    assert [s.id for s in card.skills] == ["save_note"]
    assert card.skills[0].description == "Save a note in the thread's files."
    scheme = card.security_schemes["bearer"].http_auth_security_scheme
    assert scheme.scheme == "Bearer"
    assert "bearer" in card.security_requirements[0].schemes


def test_cards_need_the_key_and_show_only_agents_the_caller_is_offered(
    server: str, alice: Any, bob: Any
) -> None:
    define_agent("helper")
    define_agent("secret")
    define_agent("beta")
    Agent.objects.filter(name="secret").update(state="draft")
    Agent.objects.get(name="beta").audience_groups.add(Group.objects.create(name="Beta"))
    card_url = f"{server}/a2a/helper/.well-known/agent-card.json"
    anonymous = httpx.get(card_url, timeout=WAIT)
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer"
    assert anonymous.json()["error"]["code"] == -32052
    key = key_of(bob)
    assert httpx.get(card_url, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    for hidden in ("secret", "beta", "nobody"):
        with pytest.raises(AgentCardResolutionError, match="404"):
            asyncio.run(_client(server, key, hidden))


# --- send, get, stream --------------------------------------------------------------------------


def test_send_answers_with_the_completed_task_and_its_context_continues_the_thread(
    server: str, alice: Any
) -> None:
    define_agent(
        "helper",
        [
            {"content": "First answer."},
            {"content": "Second answer.", "expectInput": {"messageCount": 3}},
        ],
    )
    key = key_of(alice)
    first = asyncio.run(_send(server, key, "helper", "Question one"))
    assert first.status.state == TaskState.TASK_STATE_COMPLETED
    assert _text(first) == "First answer."
    assert first.status.message.parts[0].text == "First answer."
    assert [(m.role, m.parts[0].text) for m in first.history] == [
        (Role.ROLE_USER, "Question one"),
        (Role.ROLE_AGENT, "First answer."),
    ]
    thread = Thread.objects.get(owner=alice)
    assert first.context_id == str(thread.pk)
    assert first.id == str(ThreadSession.objects.get(thread=thread).pk)

    second = asyncio.run(_send(server, key, "helper", "Question two", context_id=first.context_id))
    assert second.context_id == first.context_id and second.id != first.id
    assert _text(second) == "Second answer."
    assert [m.parts[0].text for m in second.history] == ["Question two", "Second answer."]
    assert _transcript(thread) == [
        ("user", "Question one"),
        ("assistant", "First answer."),
        ("user", "Question two"),
        ("assistant", "Second answer."),
    ]

    async def get() -> tuple[Task, Task]:
        client = await _client(server, key, "helper")
        try:
            whole = await client.get_task(GetTaskRequest(id=first.id))
            short = await client.get_task(GetTaskRequest(id=first.id, history_length=1))
            return whole, short
        finally:
            await client.close()

    got, short = asyncio.run(get())
    assert got.status.state == TaskState.TASK_STATE_COMPLETED and _text(got) == "First answer."
    assert [m.parts[0].text for m in got.history] == ["Question one", "First answer."]
    assert [m.parts[0].text for m in short.history] == ["First answer."]


def test_stream_sends_the_task_then_the_reply_as_it_streams_then_the_final_status(
    server: str, alice: Any
) -> None:
    text = "Streaming, one small piece after another."
    define_agent("helper", [{"content": text}], streaming={"chunkSize": 6, "chunkDelayMs": 30})
    events = asyncio.run(_events(server, key_of(alice), "helper", "Stream it"))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[1] == "status_update"
    # Submitted, or already working when the session was quicker than the first read.
    assert events[0].task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    assert events[1].status_update.status.state == TaskState.TASK_STATE_WORKING
    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    pieces = [u.artifact.parts[0].text for u in updates]
    assert "".join(pieces) == text
    assert len([p for p in pieces if p]) > 1, "the text came in one piece: it was not streamed"
    assert not updates[0].append and all(u.append for u in updates[1:])
    assert updates[-1].last_chunk and not any(u.last_chunk for u in updates[:-1])
    last = events[-1].status_update
    assert last.status.state == TaskState.TASK_STATE_COMPLETED
    assert last.task_id == events[0].task.id
    assert last.context_id == str(Thread.objects.get(owner=alice).pk)


def test_resubscribe_follows_a_running_task_to_its_end(server: str, alice: Any) -> None:
    text = "x" * 30
    define_agent("helper", [{"content": text}], streaming={"chunkSize": 1, "chunkDelayMs": 50})
    key = key_of(alice)

    async def run() -> tuple[Task, list[StreamResponse]]:
        client = await _client(server, key, "helper")
        follower = await _client(server, key, "helper", streaming=True)
        try:
            request = _request("Go")
            request.configuration.return_immediately = True
            [started] = [e.task async for e in client.send_message(request)]
            await asyncio.sleep(0.5)  # likely in the middle of the reply: either way works
            subscribed = follower.subscribe(SubscribeToTaskRequest(id=started.id))
            return started, [e async for e in subscribed]
        finally:
            await client.close()
            await follower.close()

    started, followed = asyncio.run(run())
    assert started.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    assert followed[0].task.id == started.id
    assert followed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    # The artifact, its updates applied, is the whole reply, however much streamed before.
    updates = [e.artifact_update for e in followed if e.HasField("artifact_update")]
    assert _applied(updates) == text and updates[-1].last_chunk


def _applied(updates: list[Any]) -> str:
    text = ""
    for update in updates:
        piece = "".join(p.text for p in update.artifact.parts)
        text = text + piece if update.append else piece
    return text


# --- cancel ---------------------------------------------------------------------------------


def test_cancel_stops_the_task_s_session(server: str, alice: Any) -> None:
    # 40 pieces, 0.25 s apart: ten seconds of answer unless the session is stopped.
    define_agent("helper", [{"content": "x" * 40}], streaming={"chunkSize": 1, "chunkDelayMs": 250})
    key = key_of(alice)

    async def run() -> tuple[Task, Task]:
        client = await _client(server, key, "helper", streaming=True)
        try:
            async for event in client.send_message(_request("Go slowly")):
                if event.HasField("artifact_update"):
                    task_id = event.artifact_update.task_id
                    break  # the reply streams: cancel it in the middle
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task_id))
            return canceled, await client.get_task(GetTaskRequest(id=task_id))
        finally:
            await client.close()

    canceled, got = asyncio.run(run())
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert got.status.state == TaskState.TASK_STATE_CANCELED
    assert list(ThreadSession.objects.values_list("status", flat=True)) == ["stopped"]


# --- input required ---------------------------------------------------------------------------


class NoteArgs(BaseModel):
    text: str


@define_tool("Save a note in the thread's files.", NoteArgs)
async def save_note(state: Any, args: NoteArgs) -> str:
    await state.write_file("/notes/today.txt", args.text, "text/plain")
    return "saved"


@pytest.fixture
def _notes_tool() -> Iterator[None]:
    reset_registry(Registry(save_note))
    yield
    reset_registry(None)


def _approval_agent() -> None:
    script = (
        TestScript()
        .add_tool_call("save_note", {"text": "Buy milk"}, id="call_1", content="Saving it.")
        .add_text("Saved your note.")
    )
    model = script.model("notes-model")
    tool = ToolConfig(name="save_note", requires_approval=True)
    prompt = PromptDefinition(
        name="notes-prompt", model=model.name, prompt="Keep notes.", tools=[tool]
    )
    agent = AgentDefinition(
        name="notes", description="Keeps notes.", side_a=SideConfig(prompt=prompt.name)
    )
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


@pytest.mark.usefixtures("_notes_tool")
def test_a_call_waiting_for_approval_is_input_required_and_the_answer_resumes_it(
    server: str, alice: Any
) -> None:
    _approval_agent()
    key = key_of(alice)
    waiting = asyncio.run(_send(server, key, "notes", "Note: buy milk"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    question = waiting.status.message.parts[0].text
    assert "save_note" in question and '"approve"' in question
    assert ThreadSession.objects.get().status == ThreadSession.Status.PARKED

    events = asyncio.run(
        _events(
            server,
            key,
            "notes",
            "approve",
            task_id=waiting.id,
            context_id=waiting.context_id,
        )
    )
    last = events[-1].status_update
    assert last.task_id == waiting.id
    assert last.status.state == TaskState.TASK_STATE_COMPLETED
    files = [
        e.artifact_update.artifact
        for e in events
        if e.HasField("artifact_update") and e.artifact_update.artifact.name.startswith("/")
    ]
    assert [(f.name, f.parts[0].raw, f.parts[0].media_type) for f in files] == [
        ("/notes/today.txt", b"Buy milk", "text/plain")
    ]
    done = asyncio.run(_get(server, key, "notes", waiting.id))
    assert _text(done) == "Saving it.\n\nSaved your note."
    assert _text(done, "/notes/today.txt") == ""  # a file part: its bytes, no text
    assert ThreadSession.objects.get().status == ThreadSession.Status.COMPLETED
    tool = Row.objects.get(role="tool")
    assert (tool.tool_status, tool.content) == ("success", "saved")


@pytest.mark.usefixtures("_notes_tool")
def test_any_other_answer_refuses_the_call_with_its_words_as_the_reason(
    server: str, alice: Any
) -> None:
    _approval_agent()
    key = key_of(alice)
    waiting = asyncio.run(_send(server, key, "notes", "Note: buy milk"))
    done = asyncio.run(_send(server, key, "notes", "Not today, thanks", task_id=waiting.id))
    assert done.id == waiting.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    tool = Row.objects.get(role="tool")
    assert tool.tool_status == "error" and "Not today, thanks" in tool.content
    assert not [a for a in done.artifacts if a.name.startswith("/")]


def test_an_mcp_server_s_question_is_input_required_and_a_data_part_answers_it(
    server: str, air_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    traveller_agent(air_server, ops)
    key = key_of(alice)
    waiting = asyncio.run(_send(server, key, "traveller", "Book LH400"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    question = waiting.status.message.parts[0].text
    assert f"The MCP server air asks: {QUESTION}" in question and '"action"' in question

    async def answer(part: Part) -> list[StreamResponse]:
        client = await _client(server, key, "traveller")
        message = Message(
            message_id=f"m-{time.monotonic_ns()}",
            role=Role.ROLE_USER,
            parts=[part],
            task_id=waiting.id,
        )
        try:
            return [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()

    with pytest.raises(InvalidParamsError, match="plain-text reply cannot answer an MCP"):
        asyncio.run(answer(Part(text="12A please")))
    seat = {"action": "accept", "content": {"seat": "12A", "window": True}}
    [event] = asyncio.run(answer(Part(data=ParseDict(seat, Value()))))
    assert event.task.id == waiting.id
    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    tool = Row.objects.get(role="tool")
    assert (tool.tool_status, tool.content) == ("success", BOOKED)


def test_one_answer_to_several_mcp_questions_is_checked_against_each_before_any_is_recorded(
    server: str, air_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    """Without ``toolCallId`` a data part answers every waiting question: one that fits the
    first question but not the second records neither (the task still waits for both)."""
    traveller_agent(air_server, ops)
    calls = [
        {"name": wire_name("air", "book"), "arguments": {"flight": "LH400"}, "id": "c1"},
        {"name": wire_name("air", "meal"), "arguments": {"flight": "LH400"}, "id": "c2"},
    ]
    model = scripted_model(
        "m2", [{"toolCalls": calls, "finishReason": "tool_calls"}, {"content": "ok"}]
    )
    prompt = PromptDefinition(
        name="p2", model="m2", prompt="Book.", tools=["mcp:air/book", "mcp:air/meal"]
    )
    agent = AgentDefinition(name="caterer", side_a=SideConfig(prompt="p2"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)
    key = key_of(alice)
    waiting = asyncio.run(_send(server, key, "caterer", "Book LH400 with a meal"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

    async def answer(body: dict[str, Any]) -> list[StreamResponse]:
        client = await _client(server, key, "caterer")
        message = Message(
            message_id=f"m-{time.monotonic_ns()}",
            role=Role.ROLE_USER,
            parts=[Part(data=ParseDict(body, Value()))],
            task_id=waiting.id,
        )
        try:
            return [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()

    seat = {"action": "accept", "content": {"seat": "12A", "window": True}}
    with pytest.raises(InvalidParamsError):
        asyncio.run(answer(seat))
    undecided = [
        (row.tool_call_id, row.status, row.metadata[waits.WAIT_KEY].get("decision"))
        for row in Row.objects.filter(role="tool").order_by("tool_call_id")
    ]
    assert undecided == [("c1", "pending", None), ("c2", "pending", None)]
    assert asyncio.run(_get(server, key, "caterer", waiting.id)).status.state == (
        TaskState.TASK_STATE_INPUT_REQUIRED
    )
    asyncio.run(answer({**seat, "toolCallId": "c1"}))
    [event] = asyncio.run(answer({"action": "accept", "content": {"meal": "fish"}}))
    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert sorted(Row.objects.filter(role="tool").values_list("content", flat=True)) == [
        BOOKED,
        "Ordered fish on LH400.",
    ]


async def _get(server: str, key: str, agent: str, task_id: str) -> Task:
    client = await _client(server, key, agent)
    try:
        return await client.get_task(GetTaskRequest(id=task_id))
    finally:
        await client.close()


# --- who may ------------------------------------------------------------------------------------


def test_a_person_who_may_not_see_an_agent_or_a_task_cannot_reach_it(
    server: str, alice: Any, bob: Any
) -> None:
    define_agent("helper")
    define_agent("beta")
    Agent.objects.get(name="beta").audience_groups.add(Group.objects.create(name="Beta"))
    alice_key, bob_key = key_of(alice), key_of(bob)
    task = asyncio.run(_send(server, alice_key, "helper", "Hi"))

    async def as_bob() -> None:
        # alice's card, bob's key: the endpoint is not there for him.
        async with _http(alice_key) as http:
            card = await A2ACardResolver(http, f"{server}/a2a/helper").get_agent_card()
        card.supported_interfaces[0].url = f"{server}/a2a/beta"
        client = ClientFactory(ClientConfig(httpx_client=_http(bob_key))).create(card)
        try:
            with pytest.raises(A2AClientError, match="404"):
                [e async for e in client.send_message(_request("Let me in"))]
        finally:
            await client.close()
        client = await _client(server, bob_key, "helper")
        try:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id=task.id))
            with pytest.raises(TaskNotFoundError):
                await client.cancel_task(CancelTaskRequest(id=task.id))
            with pytest.raises(InvalidParamsError, match="access to this thread"):
                [e async for e in client.send_message(_request("Hi", context_id=task.context_id))]
        finally:
            await client.close()

    asyncio.run(as_bob())
    assert not Thread.objects.filter(owner=bob).exists()
    assert Thread.objects.get(owner=alice).agent.name == "helper"


def test_usage_limits_and_budgets_are_a_json_rpc_error_and_no_thread_is_made(
    server: str, alice: Any
) -> None:
    define_agent("helper")
    key = key_of(alice)
    UsageLimit.objects.create(user=alice, action="message_post", limit=0, period=60)
    with pytest.raises(A2AClientError, match="-32050.*Too many messages"):
        asyncio.run(_send(server, key, "helper", "Hi"))
    UsageLimit.objects.all().delete()
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("0.00"))
    with pytest.raises(A2AClientError, match="-32050.*budget"):
        asyncio.run(_send(server, key, "helper", "Hi"))
    assert not Thread.objects.exists()
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    for authorization in ({}, {"Authorization": "Bearer not-a-key"}):
        refused = httpx.post(f"{server}/a2a/helper", json=body, headers=authorization)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == -32052


# --- bad input ----------------------------------------------------------------------------------


def _rpc(server: str, key: str, body: Any, agent: str = "helper") -> httpx.Response:
    content = body if isinstance(body, bytes) else None
    return httpx.post(
        f"{server}/a2a/{agent}",
        content=content,
        json=None if content is not None else body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=WAIT,
    )


def test_bad_requests_are_json_rpc_errors_never_a_500_or_html(server: str, alice: Any) -> None:
    define_agent("helper")
    key = key_of(alice)
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}
    cases: list[tuple[Any, int]] = [
        (b"{not json", -32700),
        ([{"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}], -32600),
        ({"jsonrpc": "1.0", "id": 1, "method": "SendMessage", "params": {}}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "DoSomething", "params": {}}, -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}, -32602),
        ({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": []}, -32602),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": {**message, "parts": []}},
            },
            -32602,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": {**message, "contextId": "not-a-thread"}},
            },
            -32602,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": {**message, "parts": [{"url": "https://example.com/x"}]}},
            },
            -32005,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": message,
                    "configuration": {"taskPushNotificationConfig": {"url": "https://x"}},
                },
            },
            -32003,
        ),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}, -32001),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}, -32602),
    ]
    for body, code in cases:
        answer = _rpc(server, key, body)
        assert answer.status_code == 200, (body, answer.text)
        assert answer.headers["content-type"] == "application/json"
        error = answer.json()["error"]
        assert error["code"] == code, (body, error)
        assert error["message"]
    assert not Thread.objects.exists()
    unknown = _rpc(server, key, {"jsonrpc": "2.0", "id": 1, "method": "GetTask"}, "nobody")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32053
    other = httpx.get(f"{server}/a2a/helper/elsewhere", headers={"Authorization": f"Bearer {key}"})
    assert other.status_code == 404 and other.headers["content-type"] == "application/json"


def test_the_0_3_method_names_answer_in_0_3_shapes(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Hello from 0.3."}])
    body = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m1",
                "role": "user",
                "parts": [{"kind": "text", "text": "Hi"}],
            }
        },
    }
    key = key_of(alice)
    task = _rpc(server, key, body).json()["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "Hello from 0.3."}]
    assert [m["role"] for m in task["history"]] == ["user", "agent"]
    got = _rpc(
        server,
        key,
        {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}},
    ).json()["result"]
    assert got["id"] == task["id"] and got["status"]["state"] == "completed"


def test_a_0_3_stream_sends_kinds_and_a_final_status_update(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Streamed for 0.3."}])
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/stream",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m1",
                "role": "user",
                "parts": [{"kind": "text", "text": "Hi"}],
            }
        },
    }
    headers = {"Authorization": f"Bearer {key_of(alice)}"}
    with httpx.stream(
        "POST", f"{server}/a2a/helper", json=body, headers=headers, timeout=WAIT
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = response.read().decode()
    events = [json.loads(e.removeprefix("data: ")) for e in text.split("\n\n") if e]
    assert all(e["jsonrpc"] == "2.0" and e["id"] == 7 for e in events)
    kinds = [e["result"]["kind"] for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status-update"
    assert "artifact-update" in kinds
    last = events[-1]["result"]
    assert last["final"] is True and last["status"]["state"] == "completed"
    assert [e["result"]["final"] for e in events if e["result"]["kind"] == "status-update"] == [
        False,
        True,
    ]


def test_a_file_part_becomes_an_attachment_of_the_posted_message(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Got your file."}])
    key = key_of(alice)

    async def send() -> Task:
        client = await _client(server, key, "helper")
        try:
            message = Message(
                message_id="m1",
                role=Role.ROLE_USER,
                parts=[
                    Part(text="Here it is"),
                    Part(raw=b"col\n1\n", filename="data.csv", media_type="text/csv"),
                ],
            )
            [event] = [e async for e in client.send_message(SendMessageRequest(message=message))]
            return event.task
        finally:
            await client.close()

    task = asyncio.run(send())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    question = Row.objects.get(role="user")
    assert question.content == "Here it is"
    [attachment] = question.attachments
    assert attachment["name"] == "data.csv"
    assert [p.text for p in task.history[0].parts] == ["Here it is", "[attachment: data.csv]"]
    # The user's attachment is not one of the task's artifacts: the session did not write it.
    assert [a.name for a in task.artifacts] == ["answer"]


def test_a_client_that_goes_away_leaves_its_task_running(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "x" * 20}], streaming={"chunkSize": 1, "chunkDelayMs": 50})
    key = key_of(alice)

    async def leave() -> str:
        client = await _client(server, key, "helper", streaming=True)
        try:
            async for event in client.send_message(_request("Go")):
                if event.HasField("artifact_update"):
                    return event.artifact_update.task_id  # goes away mid-reply
        finally:
            await client.close()
        raise AssertionError("no artifact update came")

    task_id = asyncio.run(leave())
    deadline = time.monotonic() + WAIT
    while ThreadSession.objects.get(pk=task_id).status != ThreadSession.Status.COMPLETED:
        assert time.monotonic() < deadline, ThreadSession.objects.get(pk=task_id).status
        time.sleep(0.1)
    done = asyncio.run(_get(server, key, "helper", task_id))
    assert _text(done) == "x" * 20


def test_list_tasks_pages_the_caller_s_tasks_newest_first(
    server: str, alice: Any, bob: Any
) -> None:
    define_agent("helper", [{"content": "One."}, {"content": "Two."}])
    key = key_of(alice)
    first = asyncio.run(_send(server, key, "helper", "a"))
    second = asyncio.run(_send(server, key, "helper", "b", context_id=first.context_id))
    other = asyncio.run(_send(server, key, "helper", "c"))
    asyncio.run(_send(server, key_of(bob), "helper", "not alice's"))

    async def pages() -> list[Any]:
        client = await _client(server, key, "helper")
        try:
            return [
                await client.list_tasks(ListTasksRequest()),
                await client.list_tasks(ListTasksRequest(context_id=first.context_id)),
                await client.list_tasks(ListTasksRequest(page_size=2)),
                await client.list_tasks(ListTasksRequest(page_size=2, page_token="2")),
                await client.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_CANCELED)),
                await client.list_tasks(ListTasksRequest(include_artifacts=True, page_size=1)),
            ]
        finally:
            await client.close()

    every, one_context, page_1, page_2, canceled, with_artifacts = asyncio.run(pages())
    assert [t.id for t in every.tasks] == [other.id, second.id, first.id]
    assert every.total_size == 3 and not every.tasks[0].artifacts
    assert [t.id for t in one_context.tasks] == [second.id, first.id]
    assert [t.id for t in page_1.tasks] == [other.id, second.id]
    assert page_1.next_page_token == "2"
    assert [t.id for t in page_2.tasks] == [first.id] and page_2.next_page_token == ""
    assert list(canceled.tasks) == []
    assert _text(with_artifacts.tasks[0]) == "One."


def test_a_failed_session_is_a_failed_task_with_its_reason(server: str, alice: Any) -> None:
    failing = {"error": {"message": "The vendor is down", "status": 400}}
    define_agent("helper", [failing, failing])
    key = key_of(alice)
    task = asyncio.run(_send(server, key, "helper", "Hi"))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "The vendor is down" in task.status.message.parts[0].text
    events = asyncio.run(_events(server, key, "helper", "Again", context_id=task.context_id))
    last = events[-1].status_update.status
    assert last.state == TaskState.TASK_STATE_FAILED and "vendor" in last.message.parts[0].text


def test_a_send_that_outlasts_the_wait_answers_the_working_task_which_goes_on(
    server: str, alice: Any, settings: Any
) -> None:
    settings.STUDIO_OPENAI_WAIT_SECONDS = 1
    define_agent("helper", [{"content": "Late, but here.", "delayMs": 3000}])
    key = key_of(alice)
    task = asyncio.run(_send(server, key, "helper", "Take your time"))
    assert task.status.state == TaskState.TASK_STATE_WORKING
    deadline = time.monotonic() + WAIT
    while ThreadSession.objects.get(pk=task.id).status != ThreadSession.Status.COMPLETED:
        assert time.monotonic() < deadline, "the task did not go on to its end"
        time.sleep(0.1)
    done = asyncio.run(_get(server, key, "helper", task.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert _text(done) == "Late, but here."
