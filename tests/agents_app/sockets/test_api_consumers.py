"""WebSocket consumers: authentication (ticket, key, cookie), access, filters, pings, gaps."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from agents_app.broadcast.events import thread_group
from agents_app.broadcast.live_frames import frames_event
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.access.tickets import ticket_create
from studio.asgi import application
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


@sync_to_async
def _thread_and_key(owner: str, caller: str) -> tuple[str, str]:
    User = get_user_model()
    define_agent("helper")
    owner_user = User.objects.get_or_create(username=owner)[0]
    caller_user = User.objects.get_or_create(username=caller)[0]
    thread = thread_create(user=owner_user, agent_name="helper")
    _, raw = api_key_create(user=caller_user, name="ws")
    return str(thread.pk), raw


async def _connect(path: str, raw_key: str | None = None, **kw: Any) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {raw_key}".encode())] if raw_key else []
    communicator = WebsocketCommunicator(application, path, headers=headers + kw.get("headers", []))
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def _refused(communicator: WebsocketCommunicator) -> tuple[dict[str, Any], int]:
    frame = json.loads(await communicator.receive_from())
    closed = await communicator.receive_output()
    return frame, closed["code"]


async def test_sockets_without_credentials_are_closed_with_4401() -> None:
    communicator = await _connect(f"/api/threads/{uuid.uuid4()}/stream")
    frame, code = await _refused(communicator)
    assert frame == {"type": "error", "error": "Unauthorized", "status": 401}
    assert code == 4401


async def test_other_peoples_and_unknown_threads_are_4403_and_4404() -> None:
    thread_id, bobs_key = await _thread_and_key("alice", "bob")
    frame, code = await _refused(await _connect(f"/api/threads/{thread_id}/stream", bobs_key))
    assert code == 4403 and frame["error"] == "Forbidden: You don't have access to this thread"
    missing = uuid.uuid4()
    frame, code = await _refused(await _connect(f"/api/threads/{missing}/stream", bobs_key))
    assert code == 4404 and frame["error"] == f"Thread not found: {missing}"


async def test_tickets_open_one_socket_on_one_path() -> None:
    thread_id, _ = await _thread_and_key("alice", "alice")
    alice = await sync_to_async(get_user_model().objects.get)(username="alice")
    path = f"/api/threads/{thread_id}/stream"
    ticket = await sync_to_async(ticket_create)(user=alice, pathname=path)
    first = await _connect(f"{path}?ticket={ticket}")
    await first.send_to(text_data="stream_ping")
    assert await first.receive_from() == "stream_pong"
    await first.disconnect()
    _, code = await _refused(await _connect(f"{path}?ticket={ticket}"))
    assert code == 4401  # used already


async def test_pings_are_answered(settings: Any) -> None:
    thread_id, key = await _thread_and_key("alice", "alice")
    communicator = await _connect(f"/api/threads/{thread_id}/stream", key)
    for ping, pong in (("stream_ping", "stream_pong"), ("ping", "pong")):
        await communicator.send_to(text_data=ping)
        assert await communicator.receive_from() == pong
    await communicator.disconnect()


async def _send(thread_id: str, *frames: dict[str, Any], together: bool = False) -> None:
    """Each frame as its own layer message, or all as one ``thread.frames`` message (what
    the batch publisher sends for a group's frames that are ready at once)."""
    layer = get_channel_layer()
    messages = [{"type": "thread.frame", "frame": frame} for frame in frames]
    if together:
        messages = [frames_event(messages)]
    for message in messages:
        await layer.group_send(thread_group(thread_id), message)


def _message(depth: int = 0, silent: bool = False, seq: int = 1) -> dict[str, Any]:
    return {
        "type": "message_data",
        "message_id": "m",
        "depth": depth,
        "data": {"id": "m", "depth": depth, "silent": silent},
        "seq": seq,
        "stream": "s",
    }


async def _received(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    frames = []
    while not await communicator.receive_nothing(timeout=0.2):
        frames.append(json.loads(await communicator.receive_from()))
    return frames


TOGETHER = pytest.mark.parametrize("together", [False, True], ids=["one_by_one", "together"])


@TOGETHER
async def test_I8_the_stream_filters_silent_deep_and_reasoning_frames(together: bool) -> None:
    thread_id, key = await _thread_and_key("alice", "alice")
    plain = await _connect(f"/api/threads/{thread_id}/stream", key)
    everything = await _connect(
        f"/api/threads/{thread_id}/stream?includeSilent=true&depth=2&reasoning=1", key
    )
    frames = [
        _message(seq=1),
        _message(silent=True, seq=2),
        _message(depth=1, seq=3),
        {
            "type": "message_chunk",
            "message_id": "m",
            "depth": 0,
            "chunk": "a",
            "seq": 4,
            "stream": "s",
        },
        {
            "type": "reasoning_chunk",
            "message_id": "m",
            "depth": 0,
            "chunk": "r",
            "seq": 5,
            "stream": "s",
        },
        {"type": "log_data", "log_id": "l", "data": {}, "seq": 6, "stream": "s"},
        {"type": "step_started", "step": 1, "side": "a", "timestamp": 1, "seq": 7, "stream": "s"},
    ]
    await _send(thread_id, *frames, together=together)
    assert [f["seq"] for f in await _received(plain)] == [1, 4, 7]
    assert [f["seq"] for f in await _received(everything)] == [1, 2, 3, 4, 5, 7]
    await plain.disconnect()
    await everything.disconnect()


@TOGETHER
async def test_a_gap_in_a_stream_asks_the_client_to_resync(together: bool) -> None:
    thread_id, key = await _thread_and_key("alice", "alice")
    communicator = await _connect(f"/api/threads/{thread_id}/stream", key)
    await _send(thread_id, _message(seq=1), _message(seq=4), together=together)
    frames = await _received(communicator)
    assert [f["type"] for f in frames] == ["message_data", "resync", "message_data"]
    assert frames[1]["missed"] == 2
    await communicator.disconnect()


@TOGETHER
async def test_the_logs_socket_relays_log_frames(together: bool) -> None:
    thread_id, key = await _thread_and_key("alice", "alice")
    communicator = await _connect(f"/api/threads/{thread_id}/logs", key)
    kv = {"type": "event", "eventType": "kv_changed", "data": {"key": "k", "deleted": False}}
    log = {"type": "log_data", "log_id": "l", "data": {}}
    await _send(thread_id, _message(), log, kv, together=together)
    frames = await _received(communicator)
    assert [f["type"] for f in frames] == ["log_data", "kv_data"]
    await communicator.disconnect()


async def test_the_session_cookie_counts_only_from_the_same_origin() -> None:
    thread_id, _ = await _thread_and_key("alice", "alice")

    @sync_to_async
    def cookie() -> str:
        from django.test import Client

        client = Client()
        client.force_login(get_user_model().objects.get(username="alice"))
        return client.cookies["sessionid"].value

    session = await cookie()
    base = [(b"cookie", f"sessionid={session}".encode()), (b"host", b"studio.test")]
    path = f"/api/threads/{thread_id}/stream"
    same = await _connect(path, headers=[*base, (b"origin", b"http://studio.test")])
    await same.send_to(text_data="ping")
    assert await same.receive_from() == "pong"
    await same.disconnect()
    _, code = await _refused(
        await _connect(path, headers=[*base, (b"origin", b"http://evil.test")])
    )
    assert code == 4401


async def test_I6_registry_socket_scopes_and_its_thread_created_frame() -> None:
    _, key = await _thread_and_key("alice", "alice")
    _, code = await _refused(await _connect("/api/events?scope=all", key))
    assert code == 4403
    _, code = await _refused(await _connect("/api/events?scope=weird", key))
    assert code == 4400
    mine = await _connect("/api/events", key)

    @sync_to_async
    def create() -> str:
        alice = get_user_model().objects.get(username="alice")
        return str(thread_create(user=alice, agent_name="helper").pk)

    new_id = await create()
    frame = json.loads(await mine.receive_from())
    assert frame["type"] == "thread_created" and frame["thread"]["id"] == new_id
    await mine.disconnect()


async def test_unknown_socket_paths_are_closed_with_4404() -> None:
    _, code = await _refused(await _connect("/api/nowhere"))
    assert code == 4404
