"""Sessions in the database: claiming, ordering, stop, takeover and fencing (in-process runner).

The executor is off (``STUDIO_EXECUTOR = "none"``); each test runs
``run_session_job`` itself on the test's event loop, with the in-memory channel
layer, and listens to the thread's group like a consumer would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from agents_app.broadcast.events import thread_group
from agents_app.broadcast.live_frames import frame_of
from agents_app.models import Log, Message, QueuedMessage, Thread, ThreadSession
from agents_app.models.timestamps import now_us
from agents_app.orchestration.runner import ClaimedStore, SessionLost, run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads import messages as message_service
from runtime.core.messages import Message as EngineMessage
from runtime.core.messages import new_id
from runtime.core.progress import SessionProgress
from runtime.store.protocol import Commit
from tests.agents_app.api.api_support import (  # noqa: F401
    _api_hosts,
    client_for,
    define_agent,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


async def wait_for(check: Callable[[], Awaitable[Any]], what: str, timeout: float = 10.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@sync_to_async
def _setup(user: Any, script: list[dict[str, Any]], streaming: Any = None) -> Thread:
    define_agent("helper", script, streaming=streaming)
    return thread_create(user=user, agent_name="helper")


@sync_to_async
def _post(thread: Thread, content: str) -> str:
    return message_service.message_post(thread=thread, role="user", content=content).message_id


@sync_to_async
def _active_session(thread: Thread) -> str | None:
    row = ThreadSession.objects.filter(thread=thread, status__in=["queued", "running"]).first()
    return str(row.pk) if row else None


@sync_to_async
def _transcript(thread: Thread) -> list[tuple[str, str | None, str | None]]:
    rows = Message.objects.filter(thread=thread).order_by("created_at")
    return [(m.role, m.status, m.content) for m in rows]


@sync_to_async
def _pending_assistant(thread: Thread) -> bool:
    return Message.objects.filter(thread=thread, role="assistant", status="pending").exists()


class Listener:
    """Joins a thread's group on the channel layer and collects its frames."""

    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self.frames: list[dict[str, Any]] = []

    async def join(self, thread: Thread) -> Listener:
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(thread_group(str(thread.pk)), self.channel)
        return self

    async def drain(self) -> list[dict[str, Any]]:
        while True:
            try:
                event = await asyncio.wait_for(self.layer.receive(self.channel), 0.3)
            except TimeoutError:
                return self.frames
            self.frames.append(frame_of(event))


async def test_a_posted_message_runs_as_one_session_with_frames_in_order(alice: Any) -> None:
    thread = await _setup(alice, [{"content": "Hi Alice, how can I help?"}], {"chunkSize": 6})
    listener = await Listener().join(thread)
    message_id = await _post(thread, "Hello")
    session_id = await _active_session(thread)
    assert session_id is not None
    await run_session_job(session_id)
    assert await _transcript(thread) == [
        ("user", "completed", "Hello"),
        ("assistant", "completed", "Hi Alice, how can I help?"),
    ]
    stored = await sync_to_async(
        Message.objects.filter(thread=thread).order_by("created_at").first
    )()
    assert str(stored.pk) == message_id  # stored under the posted id
    assert not await sync_to_async(QueuedMessage.objects.exists)()
    session = await sync_to_async(ThreadSession.objects.get)(pk=session_id)
    assert session.status == "completed" and session.stop_reason == "stop_on_response"
    frames = await listener.drain()
    kinds = [
        (f["type"], (f.get("data") or {}).get("role"), (f.get("data") or {}).get("status"))
        for f in frames
        if f["type"] != "log_data"
    ]
    assert kinds[:3] == [
        ("message_data", "user", "pending"),
        ("message_data", "user", "completed"),
        ("step_started", None, None),
    ]
    assert ("message_data", "assistant", "pending") in kinds
    chunks = "".join(f["chunk"] for f in frames if f["type"] == "message_chunk")
    assert chunks == "Hi Alice, how can I help?"
    completed = kinds.index(("message_data", "assistant", "completed"))
    assert kinds.index(("message_data", "assistant", "pending")) < completed
    assert max(i for i, k in enumerate(kinds) if k[0] == "message_chunk") < completed
    assert kinds[-1] == ("stopped", None, None)
    session_frames = [f for f in frames if f["stream"] == frames[-1]["stream"]]
    assert [f["seq"] for f in session_frames] == list(range(1, len(session_frames) + 1))


async def test_duplicate_deliveries_run_the_session_once(alice: Any) -> None:
    thread = await _setup(alice, [{"content": "once", "delayMs": 200}])
    await _post(thread, "Hello")
    session_id = await _active_session(thread)
    await asyncio.gather(*(run_session_job(session_id, owner=f"w{i}") for i in range(3)))
    assert await _transcript(thread) == [
        ("user", "completed", "Hello"),
        ("assistant", "completed", "once"),
    ]
    assert await sync_to_async(Log.objects.filter(thread=thread).count)() == 1


async def test_messages_posted_while_running_are_handled_in_order(alice: Any) -> None:
    script = [{"content": "one", "delayMs": 400}, {"content": "two"}, {"content": "three"}]
    thread = await _setup(alice, script)
    await _post(thread, "first")
    job = asyncio.create_task(run_session_job(await _active_session(thread)))
    await wait_for(lambda: _pending_assistant(thread), "the first reply to start")
    await _post(thread, "second")
    await _post(thread, "third")
    assert await sync_to_async(ThreadSession.objects.count)() == 1
    await asyncio.wait_for(job, 15)
    assert await _transcript(thread) == [
        ("user", "completed", "first"),
        ("assistant", "completed", "one"),
        ("user", "completed", "second"),
        ("assistant", "completed", "two"),
        ("user", "completed", "third"),
        ("assistant", "completed", "three"),
    ]
    statuses = await sync_to_async(list)(ThreadSession.objects.values_list("status", flat=True))
    assert statuses == ["completed"] * 3


async def test_stop_aborts_the_request_in_flight_and_parks_the_queue(alice: Any) -> None:
    thread = await _setup(alice, [{"content": "slow", "delayMs": 3000}])
    await _post(thread, "long one")
    job = asyncio.create_task(run_session_job(await _active_session(thread)))
    await wait_for(lambda: _pending_assistant(thread), "the request to be sent")
    await _post(thread, "parked")
    await sync_to_async(sessions.thread_stop)(thread=thread)
    await asyncio.wait_for(job, 10)
    # Aborted, not answered late: the reply failed and its request log is "interrupted".
    assert await _transcript(thread) == [
        ("user", "completed", "long one"),
        ("assistant", "failed", None),
        ("system", "completed", "Execution stopped by user"),
    ]
    log = await sync_to_async(Log.objects.get)()
    assert log.error_type == "interrupted"
    # Yet a person's stop, not a fault: the Logs API (which the inspector reloads from) and
    # one log's detail say so.
    api = await sync_to_async(client_for)(alice)
    listed = await sync_to_async(api.get)(f"/api/threads/{thread.pk}/logs")
    assert [(x["error_type"], x["stopped_by_user"]) for x in listed.json()["logs"]] == [
        ("interrupted", True)
    ]
    detail = await sync_to_async(api.get)(f"/api/threads/{thread.pk}/logs/{log.pk}")
    assert detail.json()["stopped_by_user"] is True
    assert await sync_to_async(QueuedMessage.objects.count)() == 1  # parked, not dropped
    session = await sync_to_async(ThreadSession.objects.get)()
    assert session.status == "stopped" and session.stop_reason == "aborted_by_user"
    # continue takes the parked message; the aborted request consumed no scripted response.
    continued = await sync_to_async(sessions.thread_continue)(thread=thread, side="a")
    await run_session_job(str(continued.pk))
    assert (await _transcript(thread))[3:] == [
        ("user", "completed", "parked"),
        ("assistant", "completed", "slow"),
    ]


async def test_stop_before_a_worker_claims_the_session_parks_its_message(alice: Any) -> None:
    thread = await _setup(alice, [{"content": "should not run yet"}])
    await _post(thread, "hello")
    session_id = await _active_session(thread)
    # The user presses Stop while the session is still waiting for a worker.
    await sync_to_async(sessions.thread_stop)(thread=thread)
    await run_session_job(session_id)
    assert not [row for row in await _transcript(thread) if row[0] == "assistant"]
    assert await sync_to_async(QueuedMessage.objects.count)() == 1  # parked, not dropped
    continued = await sync_to_async(sessions.thread_continue)(thread=thread, side="a")
    await run_session_job(str(continued.pk))
    assert (await _transcript(thread))[-2:] == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "should not run yet"),
    ]


async def test_a_new_user_message_resumes_a_stopped_thread(alice: Any) -> None:
    thread = await _setup(alice, [{"content": "back"}])
    await sync_to_async(sessions.thread_stop)(thread=thread)
    await _post(thread, "are you there?")
    await run_session_job(await _active_session(thread))
    assert (await _transcript(thread))[-2:] == [
        ("user", "completed", "are you there?"),
        ("assistant", "completed", "back"),
    ]
    assert (await sync_to_async(Thread.objects.get)(pk=thread.pk)).stopped is False


async def test_a_dead_workers_session_is_resumed_by_another(alice: Any, settings: Any) -> None:
    settings.STUDIO_SESSION_STALE_SECONDS = 1
    thread = await _setup(alice, [{"content": "resumed reply", "delayMs": 800}])
    await _post(thread, "Hello")
    session_id = await _active_session(thread)
    crashed = asyncio.create_task(run_session_job(session_id, owner="worker-1"))
    await wait_for(lambda: _pending_assistant(thread), "the request to be sent")
    crashed.cancel()  # the worker dies: no release, no heartbeat any more
    with pytest.raises(asyncio.CancelledError):
        await crashed
    assert await sync_to_async(sessions.sessions_sweep)() == []  # still fresh
    # Time passes for the dead worker's heartbeat: aged past the stale limit, not slept.
    stale = timezone.now() - timedelta(seconds=settings.STUDIO_SESSION_STALE_SECONDS + 1)
    await sync_to_async(ThreadSession.objects.filter(pk=session_id).update)(heartbeat_at=stale)
    assert await sync_to_async(sessions.sessions_sweep)() == [session_id]
    await run_session_job(session_id, owner="worker-2")
    assert await _transcript(thread) == [
        ("user", "completed", "Hello"),
        ("assistant", "completed", "resumed reply"),
    ]
    session = await sync_to_async(ThreadSession.objects.get)(pk=session_id)
    assert (session.owner, session.status) == ("worker-2", "completed")


async def test_a_worker_that_lost_its_session_cannot_write(alice: Any) -> None:
    thread = await _setup(alice, [{"content": "x"}])
    await _post(thread, "Hello")
    session_id = await _active_session(thread)
    claim = await sync_to_async(sessions.session_claim)(session_id, "worker-1")
    assert await sync_to_async(sessions.session_claim)(session_id, "worker-2") is None
    await sync_to_async(ThreadSession.objects.filter(pk=session_id).update)(owner="worker-2")
    written = _engine_message("written by a worker that lost its claim")
    with pytest.raises(SessionLost):
        await ClaimedStore(claim).commit(str(thread.pk), Commit(messages=[written]))
    assert not await sync_to_async(Message.objects.filter(pk=written.id).exists)()
    lost = await sync_to_async(sessions.sessions_heartbeat)([session_id], "worker-1")
    assert lost == {session_id}


def _engine_message(content: str, message_id: str | None = None) -> EngineMessage:
    return EngineMessage(
        id=message_id or new_id(), role="user", content=content, created_at=now_us()
    )


async def test_a_claimed_commit_stores_the_posted_message_and_progresses_the_claimed_row(
    alice: Any,
) -> None:
    thread = await _setup(alice, [{"content": "x"}])
    posted = await _post(thread, "Hello")
    session_id = await _active_session(thread)
    assert session_id is not None
    claim = await sync_to_async(sessions.session_claim)(session_id, "worker-1")

    def queued() -> list[str]:
        return [
            str(pk)
            for pk in QueuedMessage.objects.filter(thread=thread).values_list("pk", flat=True)
        ]

    assert await sync_to_async(queued)() == [posted]
    progress = SessionProgress(session_id=new_id(), agent="helper", root_message_id=posted)
    progress.steps = 3
    first = _engine_message("Hello", posted)
    await ClaimedStore(claim).commit(str(thread.pk), Commit(messages=[first], progress=progress))

    assert await sync_to_async(queued)() == []  # the posted message is now the stored one
    assert await _transcript(thread) == [("user", "completed", "Hello")]
    rows = await sync_to_async(lambda: list(ThreadSession.objects.filter(thread=thread)))()
    assert [str(r.pk) for r in rows] == [session_id]  # no row of the engine's own session id
    assert rows[0].owner == "worker-1" and rows[0].heartbeat_at is not None
    assert rows[0].progress["steps"] == 3 and rows[0].progress["root_message_id"] == posted


async def test_the_sweep_redispatches_queued_sessions_whose_task_was_lost(
    alice: Any, settings: Any
) -> None:
    settings.STUDIO_SESSION_REDISPATCH_SECONDS = 0
    thread = await _setup(alice, [{"content": "x"}])
    await _post(thread, "Hello")
    session_id = await _active_session(thread)
    old = timezone.now() - timedelta(seconds=5)
    await sync_to_async(ThreadSession.objects.filter(pk=session_id).update)(created_at=old)
    assert await sync_to_async(sessions.sessions_sweep)() == [session_id]
