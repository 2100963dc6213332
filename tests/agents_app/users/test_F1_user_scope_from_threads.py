"""Issue #54, rows F1, F2 and F5 from a thread's code: ``(await state.user()).call(…)`` runs
the owner's user endpoint in the owner's scope; a user endpoint that reaches back into the
thread waiting for it fails at once (spec §2.2.3); a value a thread writes fires
``user_value_changed``; user-scope executions of one person never overlap (§2.1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection
from pydantic import BaseModel

from agents_app.base.code_registry import reset_registry
from agents_app.models import Message, ThreadSession, UserValue
from agents_app.orchestration.runner import run_session_job
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.users import endpoints
from agents_app.services.users.identity import thread_user
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.extend import UserEndpointError, UserRequest, define_hook, define_user_endpoint
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

SEEN: list[Any] = []
CHANGES: list[tuple[str, str, Any]] = []


class CallArgs(BaseModel):
    method: str
    path: str
    body: Any = None


@define_tool("Call one of my user's endpoints", CallArgs)
async def call_user(state: Any, args: CallArgs) -> str:
    user = await state.user()
    try:
        SEEN.append(await user.call(args.method, args.path, args.body))
    except UserEndpointError as exc:
        SEEN.append((exc.status, exc.message))
    return "called"


class NoteArgs(BaseModel):
    key: str
    value: Any = None


@define_tool("Remember something about the user", NoteArgs)
async def remember(state: Any, args: NoteArgs) -> str:
    await state.set_user_value(args.key, args.value)
    return "remembered"


async def greet(request: UserRequest, user: Any, params: dict[str, str]) -> Any:
    await user.set_value("greeted", request.body)
    return {
        "user": user.identity().username,
        "from_thread": request.thread_id,
        "body": request.body,
    }


async def poke_back(request: UserRequest, user: Any, params: dict[str, str]) -> Any:
    """Reaches back into the thread that called it: that thread is waiting for us."""
    assert request.thread_id is not None
    await user.thread(request.thread_id).post_message("are you there?")
    return {"posted": True}


async def on_value(user: Any, key: str, value: Any) -> None:
    CHANGES.append((user.identity().username, key, value))


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    SEEN.clear()
    CHANGES.clear()
    reset_registry(
        Registry(
            call_user,
            remember,
            define_user_endpoint(greet, method="POST", route="/greet"),
            define_user_endpoint(poke_back, method="POST", route="/poke"),
            define_hook("user_value_changed", on_value),
        )
    )
    yield
    reset_registry(None)


def _agent(calls: list[dict[str, Any]]) -> None:
    script = [{"tool_calls": [call]} for call in calls] + [{"content": "Done."}]
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s", script=script)),
            (
                "prompt",
                PromptDefinition(name="p", model="m", prompt="x", tools=["call_user", "remember"]),
            ),
            ("agent", AgentDefinition(name="scoped", side_a=SideConfig(prompt="p"))),
        ],
        strict_code_names=False,
    )


def _chat(client: Any) -> str:
    thread_id: str = client.post_json("/api/threads", {"agent_id": "scoped"}).json()["threadId"]
    posted = client.post_json(f"/api/threads/{thread_id}/messages", {"content": "hi"})
    assert posted.status_code == 202, posted.content
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))
    return thread_id


def _call(method: str, path: str, body: Any = None) -> dict[str, Any]:
    return {"name": "call_user", "arguments": {"method": method, "path": path, "body": body}}


def test_F2_thread_code_calls_its_owners_user_endpoint_in_the_owners_scope(
    as_: Any, alice: Any
) -> None:
    _agent(
        [
            _call("POST", "/greet", {"hello": "there"}),
            _call("GET", "/greet"),
            _call("POST", "/nope"),
        ]
    )
    thread_id = _chat(as_(alice))

    assert SEEN[0] == {"user": "alice", "from_thread": thread_id, "body": {"hello": "there"}}
    assert SEEN[1][0] == 405 and "POST" in SEEN[1][1]
    assert SEEN[2] == (404, "No user endpoint at /nope.")
    assert UserValue.objects.get(user=alice, key="greeted").value == {"hello": "there"}
    # The endpoint's own write fired the user hook, in Alice's scope.
    assert CHANGES == [("alice", "greeted", {"hello": "there"})]


def test_F1_a_user_endpoint_calling_back_into_the_waiting_thread_fails_instead_of_deadlocking(
    as_: Any, alice: Any
) -> None:
    _agent([_call("POST", "/poke")])
    thread_id = _chat(as_(alice))

    status, message = SEEN[0]
    assert status == 409
    assert f"Thread {thread_id} is waiting for this user endpoint" in message
    assert not Message.objects.filter(thread_id=thread_id, content="are you there?").exists()
    # The thread went on to its next step: nothing hung.
    assert Message.objects.filter(thread_id=thread_id, content="Done.").exists()


def test_F5_a_value_a_thread_writes_fires_user_value_changed(as_: Any, alice: Any) -> None:
    _agent(
        [
            {"name": "remember", "arguments": {"key": "tea", "value": "green"}},
            {"name": "remember", "arguments": {"key": "tea", "value": None}},
        ]
    )
    _chat(as_(alice))
    assert CHANGES == [("alice", "tea", "green"), ("alice", "tea", None)]


async def _wait_for_lock_waiter() -> None:
    """Until some connection waits for a user-scope advisory lock (pg_locks says so)."""
    sql = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"

    def waiting() -> int:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return int(cursor.fetchone()[0])

    while not await sync_to_async(waiting)():
        await asyncio.sleep(0.01)


@pytest.mark.postgresql("advisory locks between connections")
def test_F1_one_user_scope_execution_at_a_time_per_user(alice: Any, bob: Any) -> None:
    order: list[str] = []
    entered = {name: asyncio.Event() for name in ("first", "second", "bob")}
    release = asyncio.Event()

    async def slow(request: UserRequest, user: Any, params: dict[str, str]) -> Any:
        name = request.body
        order.append(f"{name} in")
        entered[name].set()
        if name == "first":
            await release.wait()
        order.append(f"{name} out")
        return name

    reset_registry(Registry(define_user_endpoint(slow, method="POST", route="/slow")))
    found = endpoints.find("POST", "slow")
    alice_who, bob_who = thread_user(alice), thread_user(bob)

    def request(name: str) -> UserRequest:
        return UserRequest(method="POST", path="/slow", body=name)

    async def scenario() -> None:
        first = asyncio.create_task(endpoints.run(alice_who, request("first"), found))
        await entered["first"].wait()
        second = asyncio.create_task(endpoints.run(alice_who, request("second"), found))
        await _wait_for_lock_waiter()  # Alice's second call waits for her first
        # Bob's scope is his own: it runs while Alice's is held.
        assert await endpoints.run(bob_who, request("bob"), found) == "bob"
        assert not entered["second"].is_set()
        release.set()
        assert await asyncio.gather(first, second) == ["first", "second"]

    async_to_sync(scenario)()
    assert order == ["first in", "bob in", "bob out", "first out", "second in", "second out"]
