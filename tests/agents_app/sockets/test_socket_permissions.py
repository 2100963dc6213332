"""Sockets follow the same permission model as the API (issue #36): being staff grants
nothing; watching someone else's thread needs ``view_thread``, answering its tool calls on
the client-tool bridge needs ``change_thread``, the registry's ``scope=all`` ``view_thread``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.access.api_keys import api_key_create
from studio.asgi import application
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


@sync_to_async
def _alices_thread_and_staff_key(*perms: str) -> tuple[str, str]:
    """Alice's thread, and a key of a staff user holding exactly ``perms``."""
    User = get_user_model()
    define_agent("helper")
    alice = User.objects.create_user(username="alice", password="pw-for-tests-1")
    clerk = User.objects.create_user(username="clerk", password="pw-for-tests-1", is_staff=True)
    for codename in perms:
        clerk.user_permissions.add(Permission.objects.get(codename=codename))
    thread = thread_create(user=alice, agent_name="helper")
    _, raw = api_key_create(user=clerk, name="ws")
    return str(thread.pk), raw


async def _first_frame(path: str, raw_key: str) -> tuple[dict[str, Any], Any]:
    communicator = WebsocketCommunicator(
        application, path, headers=[(b"authorization", f"Bearer {raw_key}".encode())]
    )
    connected, _ = await communicator.connect()
    assert connected
    frame = json.loads(await communicator.receive_from())
    return frame, communicator


async def _code(communicator: WebsocketCommunicator) -> int:
    closed = await communicator.receive_output()
    return int(closed["code"])


async def test_staff_without_permissions_cannot_watch_or_bridge_others_threads() -> None:
    thread_id, key = await _alices_thread_and_staff_key()
    for kind in ("stream", "logs", "bridge"):
        frame, communicator = await _first_frame(f"/api/threads/{thread_id}/{kind}", key)
        assert frame["status"] == 403, (kind, frame)
        assert await _code(communicator) == 4403
    frame, communicator = await _first_frame("/api/events?scope=all", key)
    assert frame["status"] == 403 and "agents_app.view_thread" in frame["error"]
    assert await _code(communicator) == 4403


async def test_view_thread_lets_staff_watch_but_not_answer_tool_calls() -> None:
    thread_id, key = await _alices_thread_and_staff_key("view_thread")
    watching = WebsocketCommunicator(
        application,
        f"/api/threads/{thread_id}/stream",
        headers=[(b"authorization", f"Bearer {key}".encode())],
    )
    assert (await watching.connect())[0]
    await watching.send_to(text_data="ping")
    assert await watching.receive_from() == "pong"  # admitted: a refused socket says why first
    await watching.disconnect()
    frame, communicator = await _first_frame(f"/api/threads/{thread_id}/bridge", key)
    assert frame["status"] == 403, frame
    assert await _code(communicator) == 4403


async def test_change_thread_lets_staff_open_the_bridge() -> None:
    thread_id, key = await _alices_thread_and_staff_key("view_thread", "change_thread")
    frame, communicator = await _first_frame(f"/api/threads/{thread_id}/bridge", key)
    assert frame["type"] == "bridge_ready", frame
    await communicator.disconnect()
