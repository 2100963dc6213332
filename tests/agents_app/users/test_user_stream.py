"""Spec 0.2.0 row F3, the user event stream: ``WS /api/users/me/stream`` carries every
``emit`` of that user's scope as ``{"event", "data"}`` frames, live only and at most once,
to every socket the person has open; each socket is told its client id first, which
``client_ids`` lists and ``send`` reaches. Admins watch someone else's at
``/api/users/{id}/stream``; a deactivated account's sockets close.

Real WebSocket clients against the ASGI app (``studio.asgi.application``) through
Channels' ``WebsocketCommunicator``; events from the service, as thread and user code send them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction

from agents_app.models import UserStreamClient
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.users import stream
from studio.asgi import application
from tests.agents_app.api.api_support import ApiClient, _api_hosts  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

# A bound on waiting for a frame that must come, not a timing requirement.
WAIT = 20
ME = "/api/users/me/stream"


@sync_to_async
def _person(name: str, *perms: str) -> tuple[Any, str]:
    user = get_user_model().objects.create_user(name, password="pw-for-tests-1")
    for dotted in perms:
        app_label, codename = dotted.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    _, raw = api_key_create(user=user, name="laptop")
    return user, raw


def _auth(raw: str) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {raw}".encode())]


async def _open(path: str, raw: str | None) -> tuple[Any, dict[str, Any]]:
    socket = WebsocketCommunicator(application, path, headers=_auth(raw) if raw else [])
    connected, _ = await socket.connect(timeout=WAIT)
    assert connected
    return socket, json.loads(await socket.receive_from(timeout=WAIT))


async def _connected(path: str, raw: str) -> tuple[Any, str]:
    socket, first = await _open(path, raw)
    assert first["type"] == "connected" and first["clientId"].startswith("client_"), first
    return socket, first["clientId"]


async def _next(socket: Any) -> dict[str, Any]:
    return json.loads(await socket.receive_from(timeout=WAIT))  # type: ignore[no-any-return]


async def test_F3_every_socket_gets_every_event_once_and_only_its_own_user() -> None:
    alice, alice_key = await _person("alice")
    bob, bob_key = await _person("bob")
    laptop, laptop_id = await _connected(ME, alice_key)
    phone, phone_id = await _connected(ME, alice_key)
    bobs, _ = await _connected(ME, bob_key)
    assert laptop_id != phone_id

    await sync_to_async(stream.emit)(alice.pk, "order.shipped", {"order": 7, "eta": None})
    for socket in (laptop, phone):
        assert await _next(socket) == {"event": "order.shipped", "data": {"order": 7, "eta": None}}
    # Bob's socket got nothing of Alice's: the next frame it sees is its own pong.
    await bobs.send_to(text_data="stream_ping")
    assert await bobs.receive_from(timeout=WAIT) == "stream_pong"
    # At most once: nothing more arrived on Alice's sockets either.
    for socket in (laptop, phone):
        await socket.send_to(text_data="stream_ping")
        assert await socket.receive_from(timeout=WAIT) == "stream_pong"
    for socket in (laptop, phone, bobs):
        await socket.disconnect()


async def test_F3_an_event_emitted_in_a_transaction_goes_out_on_commit_and_never_on_rollback() -> (
    None
):
    alice, key = await _person("alice")
    socket, _ = await _connected(ME, key)

    @sync_to_async
    def emit_then(fail: bool) -> None:
        try:
            with transaction.atomic():
                stream.emit(alice.pk, "saved", {"ok": not fail})
                if fail:
                    raise RuntimeError("rolled back")
        except RuntimeError:
            pass

    await emit_then(True)
    await emit_then(False)
    assert await _next(socket) == {"event": "saved", "data": {"ok": True}}
    await socket.disconnect()


async def test_F3_emit_from_async_code_goes_out_at_once() -> None:
    """User code runs on the event loop (``UserState.emit``): no transaction there to wait for."""
    alice, key = await _person("alice")
    socket, _ = await _connected(ME, key)
    stream.emit(alice.pk, "typing", {"who": "agent"})
    assert await _next(socket) == {"event": "typing", "data": {"who": "agent"}}
    await socket.disconnect()


async def test_F3_client_ids_list_open_sockets_and_send_reaches_one() -> None:
    alice, key = await _person("alice")
    first, first_id = await _connected(ME, key)
    second, second_id = await _connected(ME, key)
    assert await sync_to_async(stream.client_ids)(alice.pk) == [first_id, second_id]

    assert await sync_to_async(stream.send)(alice.pk, second_id, {"type": "hello", "n": 1})
    assert await _next(second) == {"type": "hello", "n": 1}
    await first.send_to(text_data="stream_ping")
    assert await first.receive_from(timeout=WAIT) == "stream_pong"  # not sent to the first
    # Another user's id, or an unknown one, reaches nobody.
    assert not await sync_to_async(stream.send)(alice.pk + 1000, second_id, {"type": "x"})
    assert not await sync_to_async(stream.send)(alice.pk, "client_nope", {"type": "x"})

    await first.disconnect()
    assert await sync_to_async(stream.client_ids)(alice.pk) == [second_id]
    await second.disconnect()
    assert await sync_to_async(stream.client_ids)(alice.pk) == []
    assert not await UserStreamClient.objects.aexists()


async def test_F3_refusals_arrive_as_an_error_frame_then_a_close() -> None:
    _, key = await _person("alice")
    carol, _ = await _person("carol")
    socket, first = await _open(ME, None)
    assert first == {"type": "error", "error": "Unauthorized", "status": 401}
    assert (await socket.receive_output(timeout=WAIT))["code"] == 4401
    # Someone else's stream needs auth.change_user.
    socket, first = await _open(f"/api/users/{carol.pk}/stream", key)
    assert first["status"] == 403 and "auth.change_user" in first["error"]
    assert (await socket.receive_output(timeout=WAIT))["code"] == 4403
    assert not await UserStreamClient.objects.aexists()


async def test_F3_an_admin_watches_someone_elses_stream() -> None:
    carol, carol_key = await _person("carol")
    _, admin_key = await _person("helpdesk", "auth.change_user")
    mine, _ = await _connected(ME, carol_key)
    watching, _ = await _connected(f"/api/users/{carol.pk}/stream", admin_key)
    await sync_to_async(stream.emit)(carol.pk, "ping", [1, 2])
    for socket in (mine, watching):
        assert await _next(socket) == {"event": "ping", "data": [1, 2]}
    socket, first = await _open("/api/users/999999/stream", admin_key)
    assert first["status"] == 404
    for socket in (mine, watching):
        await socket.disconnect()


async def test_F3_a_ticket_opens_it_and_deactivation_closes_it() -> None:
    dave, key = await _person("dave")
    _, admin_key = await _person("admin2", "auth.delete_user")
    ticket = await sync_to_async(ApiClient(HTTP_AUTHORIZATION=f"Bearer {key}").post)(
        "/api/auth/websocket-ticket", {"pathname": ME}, content_type="application/json"
    )
    assert ticket.status_code == 200, ticket.content
    socket, _ = await _connected(f"{ME}?ticket={ticket.json()['ticket']}", "")

    # Deleting the account over the users admin API deactivates it: offboarding closes it.
    deleted = await sync_to_async(ApiClient(HTTP_AUTHORIZATION=f"Bearer {admin_key}").delete)(
        f"/api/users/{dave.pk}"
    )
    assert deleted.status_code == 200, deleted.content
    closing = await _next(socket)
    assert closing["type"] == "error" and closing["status"] == 401
    assert (await socket.receive_output(timeout=WAIT))["code"] == 4401


async def _welcome(user: Any, client_id: str) -> None:
    await user.send(client_id, {"type": "welcome", "clients": await user.clients()})


async def _goodbye(user: Any, client_id: str) -> None:
    await user.emit("left", {"clientId": client_id})


async def test_F3_the_user_hooks_run_as_a_socket_opens_and_closes() -> None:
    """``user_client_attached`` greets the new socket by its id; ``user_client_detached``
    tells the person's other sockets (F5's hooks, called by this socket)."""
    from agents_app.base.code_registry import reset_registry
    from runtime.tools.registry import Registry, define_hook

    reset_registry(
        Registry(
            define_hook("user_client_attached", _welcome),
            define_hook("user_client_detached", _goodbye),
        )
    )
    try:
        _, key = await _person("alice")
        staying, staying_id = await _connected(ME, key)
        assert await _next(staying) == {"type": "welcome", "clients": [staying_id]}
        leaving, leaving_id = await _connected(ME, key)
        assert await _next(leaving) == {"type": "welcome", "clients": [staying_id, leaving_id]}
        await leaving.disconnect()
        assert await _next(staying) == {"event": "left", "data": {"clientId": leaving_id}}
        await staying.disconnect()
    finally:
        reset_registry(None)


async def test_F3_a_plain_get_is_426() -> None:
    carol, key = await _person("carol")
    client = ApiClient(HTTP_AUTHORIZATION=f"Bearer {key}")
    for path in (ME, f"/api/users/{carol.pk}/stream"):
        answer = await sync_to_async(client.get)(path)
        expected = 426 if path == ME else 403  # someone else's needs auth.change_user
        assert answer.status_code == expected, answer.content
    assert (await sync_to_async(client.get)(ME)).json() == {
        "error": "This endpoint only supports WebSocket connections"
    }


def test_F3_emit_refuses_what_is_not_json_or_has_no_name() -> None:
    from agents_app.base.errors import Invalid

    with pytest.raises(Invalid, match="must be JSON"):
        stream.emit(1, "x", {"when": object()})
    with pytest.raises(Invalid, match="1 to 200 characters"):
        stream.emit(1, "", {})
