"""API responses and WebSocket frames that show thread content are redacted with the thread's
secrets, even for rows that never went through the engine (written by other code paths)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.broadcast.events import asend_thread_frames
from agents_app.models import Log, Message, ThreadValue
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.threads import files as thread_files
from runtime.store.events import event
from studio.asgi import application
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

SECRET = "sk-api-canary-Hn4/+k?v=9&w"
MARK = "[REDACTED:API_KEY]"


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def _planted(user: Any) -> Any:
    define_agent("helper")
    thread = thread_create(user=user, agent_name="helper", env={"API_KEY": SECRET})
    Message.objects.create(thread=thread, role="user", content=f"key {SECRET}", created_at=10)
    Log.objects.create(thread=thread, kind="tool", tool_name="t", error=f"failed with {SECRET}")
    ThreadValue.objects.create(thread=thread, key="creds", value={"token": SECRET})
    thread_files.file_write(thread, "/n.txt", b"x", "text/plain", metadata={"token": SECRET})
    return thread


@pytest.mark.django_db
def test_api_responses_with_thread_content_are_redacted(as_: Any, alice: Any) -> None:
    thread = _planted(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}"
    urls = [
        base,
        base + "/messages",
        base + "/logs",
        base + "/kv",
        base + "/kv?key=creds",
        base + "/fs",
        base + "/fs?find=*.txt",
        base + "/fs/n.txt?format=json",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content)
        assert SECRET not in response.content.decode(), url
    assert MARK in client.get(base + "/messages").content.decode()
    assert client.get(base + "/kv?key=creds").json()["value"] == {"token": MARK}
    written = client.post_json(base + "/kv", {"key": "echo", "value": SECRET}).json()
    assert written["value"] == MARK


@pytest.mark.django_db
def test_secrets_are_loaded_once_per_request(as_: Any, alice: Any) -> None:
    thread = _planted(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/messages"
    client.get(url)  # warm-up (sessions, auth caches)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    env_reads = [q["sql"] for q in queries if "agents_app_envvalue" in q["sql"]]
    assert 0 < len(env_reads) <= 3  # one redactor load (a few queries), not one per message


@sync_to_async
def _planted_with_key() -> tuple[str, str]:
    user = get_user_model().objects.create(username="alice")
    thread = _planted(user)
    _, raw = api_key_create(user=user, name="ws")
    return str(thread.pk), raw


async def _planted_stream() -> tuple[str, WebsocketCommunicator]:
    """A planted thread and its stream socket, connected with its owner's API key."""
    thread_id, key = await _planted_with_key()
    communicator = WebsocketCommunicator(
        application,
        f"/api/threads/{thread_id}/stream",
        headers=[(b"authorization", f"Bearer {key}".encode())],
    )
    connected, _ = await communicator.connect()
    assert connected
    return thread_id, communicator


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_websocket_frames_are_redacted() -> None:
    thread_id, communicator = await _planted_stream()
    # A frame from outside the engine (a service, a consumer) carrying the secret.
    await asend_thread_frames(thread_id, [event("custom", {"note": f"leaked {SECRET}"})])
    frame = json.loads(await communicator.receive_from())
    assert frame["data"] == {"note": f"leaked {MARK}"}
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_a_socket_loads_its_redactor_while_connecting(monkeypatch: Any) -> None:
    """The first frame of a reply finds the thread's redactor ready: the socket loaded it
    with its access check, so a burst of session starts does not queue a secrets query per
    socket on the sockets' database pool (issue #21)."""
    from agents_app.sockets import consumers

    calls: list[str] = []
    real = consumers.socket_db

    async def counted(fn: Any, *args: Any) -> Any:
        calls.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args)

    monkeypatch.setattr(consumers, "socket_db", counted)

    thread_id, communicator = await _planted_stream()
    assert calls[-1] == "_admit", calls  # the access check and the redactor, on one trip
    connected_with = len(calls)
    await asend_thread_frames(thread_id, [event("custom", {"note": f"leaked {SECRET}"})])
    frame = json.loads(await communicator.receive_from())
    assert frame["data"] == {"note": f"leaked {MARK}"}
    assert len(calls) == connected_with, calls  # the frame used the redactor loaded at connect
    await communicator.disconnect()
