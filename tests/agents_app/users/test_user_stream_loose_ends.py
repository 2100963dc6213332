"""Spec 0.2.0 F3, the user stream's loose ends (issue #54): what a user stream carries passes
the same secret redaction as thread frames, and an admin watching someone's stream is
disconnected when that person is deactivated, as the person's own sockets are.

Real WebSocket clients against the ASGI app, as in ``test_user_stream``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import EnvValue
from agents_app.services.users import stream
from tests.agents_app.api.api_support import ApiClient, _api_hosts  # noqa: F401
from tests.agents_app.users.test_user_stream import ME, WAIT, _connected, _next, _open, _person

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]
MINE = f"sk-mine-{uuid.uuid4().hex}"
OPERATORS = f"sk-ops-{uuid.uuid4().hex}"
SOMEONE_ELSES = f"sk-bob-{uuid.uuid4().hex}"


@sync_to_async
def _secret(value: str, **fields: Any) -> None:
    env = EnvValue(value_type="secret", **fields)
    env.value = value
    env.save()


async def test_F3_user_event_data_is_redacted_like_thread_frames() -> None:
    alice, key = await _person("alice")
    bob, _ = await _person("bob")
    _, admin_key = await _person("helpdesk", "auth.change_user")
    await _secret(MINE, scope="user", user=alice, key="CRM_TOKEN")
    await _secret(OPERATORS, scope="instance", key="OPENAI_API_KEY")
    await _secret(SOMEONE_ELSES, scope="user", user=bob, key="BOB_TOKEN")
    mine, client_id = await _connected(ME, key)
    watching, _ = await _connected(f"/api/users/{alice.pk}/stream", admin_key)

    said = {"token": MINE, "nested": [f'quoted "{OPERATORS}"'], "other": SOMEONE_ELSES}
    await sync_to_async(stream.emit)(alice.pk, "synced", said)
    for socket in (mine, watching):
        frame = await socket.receive_from(timeout=WAIT)
        assert MINE not in frame and OPERATORS not in frame, frame
        data = json.loads(frame)["data"]
        # Her own secret by name, the operator's unnamed (as in thread frames); another
        # person's value is not one of hers and is left as sent.
        assert data == {
            "token": "[REDACTED:CRM_TOKEN]",
            "nested": ['quoted "[REDACTED]"'],
            "other": SOMEONE_ELSES,
        }
    # A frame sent to one client passes it too.
    assert await sync_to_async(stream.send)(alice.pk, client_id, {"type": "x", "k": MINE})
    assert await _next(mine) == {"type": "x", "k": "[REDACTED:CRM_TOKEN]"}
    for socket in (mine, watching):
        await socket.disconnect()


async def test_F3_an_admin_watching_a_stream_is_disconnected_when_the_person_is_deactivated() -> (
    None
):
    carol, carol_key = await _person("carol")
    _, admin_key = await _person("helpdesk", "auth.change_user", "auth.delete_user")
    own, _ = await _connected(ME, carol_key)
    watching, _ = await _connected(f"/api/users/{carol.pk}/stream", admin_key)

    admin_api = ApiClient(HTTP_AUTHORIZATION=f"Bearer {admin_key}")
    deleted = await sync_to_async(admin_api.delete)(f"/api/users/{carol.pk}")
    assert deleted.status_code == 200, deleted.content

    closing = await _next(own)
    assert closing["type"] == "error" and closing["status"] == 401
    assert (await own.receive_output(timeout=WAIT))["code"] == 4401
    # The admin's credential still holds: the socket says the person is gone.
    closing = await _next(watching)
    assert closing == {"type": "error", "error": closing["error"], "status": 410}
    assert "deactivated" in closing["error"]
    assert (await watching.receive_output(timeout=WAIT))["code"] == 4410

    # And a deactivated person's stream cannot be opened to watch.
    socket, first = await _open(f"/api/users/{carol.pk}/stream", admin_key)
    assert first["status"] == 404 and "deactivated" in first["error"]
    assert (await socket.receive_output(timeout=WAIT))["code"] == 4404


async def test_F3_an_admin_watching_keeps_the_stream_when_someone_else_is_deactivated() -> None:
    carol, _ = await _person("carol")
    dave, _ = await _person("dave")
    _, admin_key = await _person("helpdesk", "auth.change_user", "auth.delete_user")
    watching, _ = await _connected(f"/api/users/{carol.pk}/stream", admin_key)
    admin_api = ApiClient(HTTP_AUTHORIZATION=f"Bearer {admin_key}")
    assert (await sync_to_async(admin_api.delete)(f"/api/users/{dave.pk}")).status_code == 200
    await sync_to_async(stream.emit)(carol.pk, "still", 1)
    assert await _next(watching) == {"event": "still", "data": 1}
    await watching.disconnect()
