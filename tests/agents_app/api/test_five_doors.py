"""One agent, five doors (issue #57): the thread API, ``/v1`` (the ``openai`` package), ``/a2a``
(the a2a-sdk client), ``/ag-ui`` (events validated by ``ag-ui-protocol``'s models) and ``/mcp``
(the ``mcp`` SDK's client) give the same answer to the same question, each over a real
socket to the production composition (``door_server``); and a person the agent is not
offered to reaches it through none of them, each door refusing in its own terms.

The agent is scripted (the ``test`` provider): every thread's first request must carry the
question (``expectInput``), so an answer through a door proves the question reached the model.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import openai
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.errors import AgentCardResolutionError
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
from ag_ui.core import Event, RunAgentInput, UserMessage
from django.contrib.auth.models import Group
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from agents_app.models import Agent, Thread
from agents_app.models import Message as Row
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

WAIT = 20  # seconds a client waits for one answer
QUESTION = "What is the answer?"
ANSWER = "The answer is 42."
AG_UI_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def _oracle(name: str = "oracle") -> None:
    define_agent(name, [{"content": ANSWER, "expectInput": {"containsMessage": QUESTION}}])
    Agent.objects.filter(name=name).update(expose_as_tool=True)


def _key(user: Any) -> str:
    _, raw = api_key_create(user=user, name=f"doors key of {user.username}")
    return raw


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- each door, asked the question --------------------------------------------------------


def via_thread_api(server: str, key: str, agent: str) -> str:
    with httpx.Client(base_url=f"{server}/api", headers=_auth(key), timeout=WAIT) as api:
        created = api.post("/threads", json={"agent_id": agent})
        assert created.status_code == 200, created.text
        thread = created.json()["threadId"]
        posted = api.post(f"/threads/{thread}/messages", json={"role": "user", "content": QUESTION})
        assert posted.status_code == 202, posted.text
        deadline = time.monotonic() + WAIT
        while True:
            # Whether it runs first, then the messages: read the other way round, a reply still
            # being written (its content not yet there) could be read just before the session
            # ended, and taken as the answer.
            executing = api.get("/threads", params={"search": thread}).json()["threads"]
            rows = api.get(f"/threads/{thread}/messages", params={"order": "asc"}).json()
            said = [m["content"] for m in rows["messages"] if m["role"] == "assistant"]
            if said and not executing[0]["executing"]:
                return str(said[-1])
            assert time.monotonic() < deadline, rows
            time.sleep(0.1)


def via_openai(server: str, key: str, agent: str) -> str:
    client = openai.OpenAI(base_url=f"{server}/v1", api_key=key, max_retries=0, timeout=WAIT)
    completion = client.chat.completions.create(
        model=agent, messages=[{"role": "user", "content": QUESTION}]
    )
    return str(completion.choices[0].message.content)


def via_a2a(server: str, key: str, agent: str) -> str:
    async def ask() -> str:
        http = httpx.AsyncClient(headers=_auth(key), timeout=WAIT)
        client = await ClientFactory(
            ClientConfig(httpx_client=http, streaming=False)
        ).create_from_url(f"{server}/a2a/{agent}")
        message = Message(
            message_id=f"m-{time.monotonic_ns()}", role=Role.ROLE_USER, parts=[Part(text=QUESTION)]
        )
        try:
            [event] = [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()
        assert event.task.status.state == TaskState.TASK_STATE_COMPLETED, event
        return "".join(p.text for p in event.task.status.message.parts)

    return asyncio.run(ask())


def ag_ui_post(server: str, key: str, agent: str) -> httpx.Response:
    body = RunAgentInput(
        thread_id=f"doors-{time.monotonic_ns()}",
        run_id=f"run-{time.monotonic_ns()}",
        messages=[UserMessage(id=f"u-{time.monotonic_ns()}", content=QUESTION)],
        tools=[],
        context=[],
        state={},
        forwarded_props={},
    ).model_dump(mode="json", by_alias=True)
    headers = {**_auth(key), "Accept": "text/event-stream"}
    return httpx.post(f"{server}/ag-ui/{agent}", json=body, headers=headers, timeout=WAIT)


def via_ag_ui(server: str, key: str, agent: str) -> str:
    response = ag_ui_post(server, key, agent)
    assert response.status_code == 200, response.text
    events = [
        AG_UI_EVENT.validate_python(json.loads(line.removeprefix("data: ")))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    assert events[-1].type.value == "RUN_FINISHED", [e.type.value for e in events]
    return "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")


@asynccontextmanager
async def mcp_session(server: str, key: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=_auth(key), timeout=httpx2.Timeout(WAIT)) as http,
        streamable_http_client(f"{server}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def via_mcp(server: str, key: str, agent: str) -> str:
    async def ask() -> str:
        async with mcp_session(server, key) as session:
            result = await session.call_tool(agent, {"message": QUESTION})
        assert not result.is_error, result.content
        return str(result.content[0].text)  # type: ignore[union-attr]

    return asyncio.run(ask())


DOORS = {
    "thread API": via_thread_api,
    "/v1": via_openai,
    "/a2a": via_a2a,
    "/ag-ui": via_ag_ui,
    "/mcp": via_mcp,
}


def test_the_same_agent_answers_identically_through_all_five_doors(server: str, alice: Any) -> None:
    _oracle()
    key = _key(alice)
    answers = {door: ask(server, key, "oracle") for door, ask in DOORS.items()}
    assert answers == dict.fromkeys(DOORS, ANSWER)
    # Five doors, five threads of alice's on the one agent, each the same two messages.
    threads = Thread.objects.filter(owner=alice, agent__name="oracle")
    assert threads.count() == 5
    for thread in threads:
        rows = Row.objects.filter(thread=thread, depth=0).order_by("created_at")
        assert [(m.role, m.content) for m in rows] == [("user", QUESTION), ("assistant", ANSWER)]


# --- a person the agent is not offered to -------------------------------------------------


def refusals(server: str, key: str, agent: str) -> dict[str, Any]:
    """What each door answers ``key``'s user for ``agent``, in its own terms."""
    out: dict[str, Any] = {}
    created = httpx.post(
        f"{server}/api/threads", json={"agent_id": agent}, headers=_auth(key), timeout=WAIT
    )
    out["thread API"] = (created.status_code, created.json().get("error"))
    client = openai.OpenAI(base_url=f"{server}/v1", api_key=key, max_retries=0, timeout=WAIT)
    try:
        client.chat.completions.create(model=agent, messages=[{"role": "user", "content": "Hi"}])
        out["/v1"] = "answered"
    except openai.NotFoundError as exc:
        out["/v1"] = (404, exc.response.json()["error"]["code"])
    try:
        via_a2a(server, key, agent)
        out["/a2a"] = "answered"
    except AgentCardResolutionError as exc:
        out["/a2a"] = "404" in str(exc)
    refused = ag_ui_post(server, key, agent)
    out["/ag-ui"] = (refused.status_code, refused.json()["error"]["code"])

    async def mcp() -> Any:
        async with mcp_session(server, key) as session:
            listed = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool(agent, {"message": "Hi"})
        return agent in listed, result.is_error, result.content[0].text  # type: ignore[union-attr]

    out["/mcp"] = asyncio.run(mcp())
    return out


def test_a_person_the_agent_is_not_offered_to_reaches_it_through_no_door(
    server: str, alice: Any, bob: Any
) -> None:
    _oracle("unpublished")
    _oracle("beta")
    Agent.objects.filter(name="unpublished").update(state="draft")
    Agent.objects.get(name="beta").audience_groups.add(Group.objects.create(name="Beta"))
    key = _key(bob)
    for agent in ("unpublished", "beta"):
        assert refusals(server, key, agent) == {
            "thread API": (404, f"Agent not found: {agent}"),
            "/v1": (404, "model_not_found"),
            "/a2a": True,
            "/ag-ui": (404, "agent_not_found"),
            "/mcp": (
                False,
                True,
                f"Agent not found or not exposed as a tool: {agent}",
            ),
        }, agent
    assert not Thread.objects.filter(owner=bob).exists()
    # The same doors do open for a person in the audience (the refusals above are the
    # audience's, not a broken agent's).
    Group.objects.get(name="Beta").user_set.add(alice)
    assert via_mcp(server, _key(alice), "beta") == ANSWER
