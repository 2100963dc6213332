"""Sockets follow their credentials (issue #36, item 5): revoking an API key or signing out
closes the stream, logs and events sockets opened with it, whether they authenticated with
the credential itself or with a ticket it minted; other credentials' sockets stay open.

Real WebSocket clients against the ASGI app (``studio.asgi.application``), revocations
over the API (the bridge socket, with a real session parked on a client call, is in
tests/integration/test_client_bridge.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from agents_app.models import ApiKey
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.access.api_keys import api_key_create
from studio.asgi import application
from tests.agents_app.api.api_support import ApiClient, _api_hosts, define_agent  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

REVOKED = {
    "type": "error",
    "error": "Unauthorized: the credential this socket was opened with was revoked",
    "status": 401,
}
# A bound on waiting for a frame that must come, not a timing requirement.
WAIT = 20


@sync_to_async
def _alice_thread() -> tuple[Any, str]:
    define_agent("helper")
    alice = get_user_model().objects.create_user("alice", password="pw-for-tests-1")
    return alice, str(thread_create(user=alice, agent_name="helper").pk)


@sync_to_async
def _key(user: Any, name: str) -> tuple[int, str]:
    key, raw = api_key_create(user=user, name=name)
    return key.pk, raw


def _bearer(raw: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


async def _open(path: str, headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    communicator = WebsocketCommunicator(application, path, headers=headers or [])
    connected, _ = await communicator.connect(timeout=WAIT)
    assert connected
    await communicator.send_to(text_data="ping")
    assert await communicator.receive_from(timeout=WAIT) == "pong"  # open and admitted
    return communicator


def _auth(raw: str) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {raw}".encode())]


@sync_to_async
def _ticket(client: ApiClient, path: str) -> str:
    response = client.post_json("/api/auth/websocket-ticket", {"pathname": path})
    assert response.status_code == 200, response.content
    return str(response.json()["ticket"])


async def _sockets(thread_id: str, raw: str, client: ApiClient) -> list[Any]:
    """Stream, logs and events sockets opened with the credential, and one with its ticket."""
    stream = f"/api/threads/{thread_id}/stream"
    return [
        await _open(stream, _auth(raw)),
        await _open(f"/api/threads/{thread_id}/logs", _auth(raw)),
        await _open("/api/events?scope=user", _auth(raw)),
        await _open(f"{stream}?ticket={await _ticket(client, stream)}"),
    ]


async def _closed_as_revoked(communicator: Any) -> None:
    assert json.loads(await communicator.receive_from(timeout=WAIT)) == REVOKED
    closed = await communicator.receive_output(timeout=WAIT)
    assert closed == {"type": "websocket.close", "code": 4401}


async def _still_open(communicator: Any) -> None:
    await communicator.send_to(text_data="stream_ping")
    assert await communicator.receive_from(timeout=WAIT) == "stream_pong"
    await communicator.disconnect()


async def test_revoked_key_closes_its_sockets() -> None:
    alice, thread_id = await _alice_thread()
    key_id, raw = await _key(alice, "laptop")
    _, other_raw = await _key(alice, "server")
    doomed = await _sockets(thread_id, raw, ApiClient(**_bearer(raw)))
    survivor = await _open(f"/api/threads/{thread_id}/stream", _auth(other_raw))

    # Revoked by another credential, over the API.
    revoked = await sync_to_async(ApiClient(**_bearer(other_raw)).delete)(f"/api/api-keys/{key_id}")
    assert revoked.status_code == 200, revoked.content
    for communicator in doomed:
        await _closed_as_revoked(communicator)
    await _still_open(survivor)


async def test_a_key_revoking_itself_closes_its_sockets() -> None:
    alice, thread_id = await _alice_thread()
    _, raw = await _key(alice, "laptop")
    client = ApiClient(**_bearer(raw))
    doomed = await _sockets(thread_id, raw, client)
    revoked = await sync_to_async(client.delete)("/api/auth/current-key")
    assert revoked.json() == {"revoked": True}
    for communicator in doomed:
        await _closed_as_revoked(communicator)


async def test_revoking_a_key_in_the_studio_closes_its_sockets() -> None:
    alice, thread_id = await _alice_thread()
    key_id, raw = await _key(alice, "laptop")
    socket = await _open(f"/api/threads/{thread_id}/stream", _auth(raw))

    @sync_to_async
    def revoke_in_the_studio() -> None:
        admin = get_user_model().objects.create_superuser("root", password="pw-for-tests-1")
        studio = ApiClient()
        studio.force_login(admin)
        response = studio.post(
            "/admin/agents_app/apikey/",
            {"action": "revoke", "_selected_action": [key_id]},
        )
        assert response.status_code == 302, response.content
        assert ApiKey.objects.get(pk=key_id).revoked_at is not None

    await revoke_in_the_studio()
    await _closed_as_revoked(socket)


async def test_signing_out_a_login_token_closes_its_sockets() -> None:
    alice, thread_id = await _alice_thread()
    _, other_raw = await _key(alice, "server")
    login = await sync_to_async(ApiClient().post_json)(
        "/api/auth/login", {"username": "alice", "password": "pw-for-tests-1"}
    )
    token = login.json()["token"]
    client = ApiClient(**_bearer(token))
    doomed = await _sockets(thread_id, token, client)
    survivor = await _open(f"/api/threads/{thread_id}/stream", _auth(other_raw))
    signed_out = await sync_to_async(client.post_json)("/api/auth/logout")
    assert signed_out.json() == {"success": True}
    for communicator in doomed:
        await _closed_as_revoked(communicator)
    await _still_open(survivor)


async def test_signing_out_a_cookie_session_closes_its_sockets() -> None:
    alice, thread_id = await _alice_thread()
    browser = ApiClient()
    await sync_to_async(browser.force_login)(alice)
    cookie = browser.cookies[django_settings.SESSION_COOKIE_NAME].value
    stream = f"/api/threads/{thread_id}/stream"
    by_cookie = await _open(
        stream, [(b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())]
    )
    by_ticket = await _open(f"{stream}?ticket={await _ticket(browser, stream)}")
    signed_out = await sync_to_async(browser.post_json)("/api/auth/logout")
    assert signed_out.json() == {"success": True}
    await _closed_as_revoked(by_cookie)
    await _closed_as_revoked(by_ticket)


async def test_a_ticket_of_a_revoked_key_opens_nothing() -> None:
    # Minted, then the key is revoked before the socket opens: no socket was there to close.
    alice, thread_id = await _alice_thread()
    key_id, raw = await _key(alice, "laptop")
    stream = f"/api/threads/{thread_id}/stream"
    ticket = await _ticket(ApiClient(**_bearer(raw)), stream)
    await sync_to_async(ApiClient(**_bearer(raw)).delete)("/api/auth/current-key")
    communicator = WebsocketCommunicator(application, f"{stream}?ticket={ticket}")
    assert (await communicator.connect(timeout=WAIT))[0]
    assert json.loads(await communicator.receive_from(timeout=WAIT))["status"] == 401
    assert (await communicator.receive_output(timeout=WAIT))["code"] == 4401


async def test_deactivating_a_user_closes_every_socket_of_theirs() -> None:
    """Issue #52 (offboarding): deactivated in the studio, alice's sockets close, whichever
    of her credentials opened them (key, login token, ticket); bob's stays open."""
    alice, thread_id = await _alice_thread()
    _, raw = await _key(alice, "laptop")
    doomed = await _sockets(thread_id, raw, ApiClient(**_bearer(raw)))

    @sync_to_async
    def bob_socket_key() -> str:
        bob = get_user_model().objects.create_user("bob", password="pw-for-tests-1")
        return api_key_create(user=bob, name="bob")[1]

    survivor = await _open("/api/events?scope=user", _auth(await bob_socket_key()))

    @sync_to_async
    def deactivate() -> None:
        user = get_user_model().objects.get(pk=alice.pk)
        user.is_active = False
        user.save()

    await deactivate()
    for communicator in doomed:
        await _closed_as_revoked(communicator)
    await survivor.send_to(text_data="ping")
    assert await survivor.receive_from(timeout=WAIT) == "pong"
    await survivor.disconnect()
