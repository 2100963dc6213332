"""Secrets never stored in clear where a user typed them (message posts and their thread-list
preview, edits, KV values over the API and from tools), and redaction is no oracle: a secret
the caller does not own (instance tier) is marked without its name, so echoing a guess never
tells its name. Checked with planted canaries through the API and over WebSocket frames."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from agents_app.bridge.store import DjangoStore
from agents_app.models import EnvValue, Message, QueuedMessage, Thread, ThreadValue
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.threads.messages import message_post
from runtime.core.redaction import Redactor
from runtime.engine import Engine
from runtime.store.events import ListSink
from studio.asgi import application
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

INSTANCE_SECRET = "inst-canary-7Qf2-zz91"
OWN_SECRET = "alice-own-canary-4kd8"
CANARIES = Redactor([("I", INSTANCE_SECRET), ("O", OWN_SECRET)])
TYPED = f"use {INSTANCE_SECRET} and {OWN_SECRET} please"
SHOWN = "use [REDACTED] and [REDACTED:OWN_KEY] please"


def _plant_instance() -> None:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="INSTANCE_CANARY", value_type="secret")
    row.value = INSTANCE_SECRET
    row.save()


def _thread(user: Any) -> Thread:
    define_agent("helper")
    _plant_instance()
    return thread_create(user=user, agent_name="helper", env={"OWN_KEY": OWN_SECRET})


def _stored_text_hits() -> list[str]:
    """Every text column of the tables a typed message, edit or value lands in, searched."""
    hits = []
    columns = [
        ("agents_app_thread", "last_message_preview"),
        ("agents_app_queuedmessage", "content"),
        # CAST, not ``::``: the same statement on PostgreSQL and SQLite.
        ("agents_app_queuedmessage", "CAST(attachments AS TEXT)"),
        ("agents_app_message", "content"),
        ("agents_app_threadvalue", "CAST(value AS TEXT)"),
        ("agents_app_threadvalue", "sealed"),
        ("agents_app_threadfile", "CAST(metadata AS TEXT) || path || name"),
    ]
    with connection.cursor() as cursor:
        for table, column in columns:
            cursor.execute(f"SELECT {column} FROM {table}")  # noqa: S608 (fixed names)
            hits += [
                f"{table}.{column}" for (v,) in cursor.fetchall() if CANARIES.contains(v or "")
            ]
    return hits


@pytest.mark.django_db
def test_typed_secret_never_stored_in_clear_message_post_and_preview(as_: Any, alice: Any) -> None:
    thread = _thread(alice)
    client = as_(alice)
    attachment = {"name": f"{INSTANCE_SECRET}.txt", "mimeType": "text/plain", "data": "eA=="}
    posted = client.post_json(
        f"/api/threads/{thread.pk}/messages", {"content": TYPED, "attachments": [attachment]}
    )
    assert posted.status_code == 202, posted.content
    assert not CANARIES.contains(posted.content.decode())
    assert QueuedMessage.objects.get(thread=thread).content == SHOWN
    assert Thread.objects.get(pk=thread.pk).last_message_preview == SHOWN
    listed = client.get("/api/threads").content.decode()
    assert SHOWN in listed and not CANARIES.contains(listed)
    assert _stored_text_hits() == []


@pytest.mark.django_db
def test_typed_secret_never_stored_in_clear_message_edit(as_: Any, alice: Any) -> None:
    thread = _thread(alice)
    stored = Message.objects.create(thread=thread, role="user", content="hello", created_at=10)
    client = as_(alice)
    edited = client.patch(
        f"/api/threads/{thread.pk}/messages/{stored.pk}",
        {"content": TYPED},
        content_type="application/json",
    )
    assert edited.status_code == 200, edited.content
    assert Message.objects.get(pk=stored.pk).content == SHOWN
    queued_id = message_post(thread=thread, role="user", content="later").message_id
    client.patch(
        f"/api/threads/{thread.pk}/messages/{queued_id}",
        {"content": TYPED},
        content_type="application/json",
    )
    assert QueuedMessage.objects.get(pk=queued_id).content == SHOWN
    assert _stored_text_hits() == []


@pytest.mark.django_db
def test_typed_secret_never_stored_in_clear_kv_value(as_: Any, alice: Any) -> None:
    thread = _thread(alice)
    client = as_(alice)
    value = {"note": TYPED, "list": [INSTANCE_SECRET]}
    written = client.post_json(f"/api/threads/{thread.pk}/kv", {"key": "k", "value": value})
    assert written.status_code == 200, written.content
    assert ThreadValue.objects.get(thread=thread, key="k").value == {
        "note": SHOWN,
        "list": ["[REDACTED]"],
    }
    assert _stored_text_hits() == []


@pytest.mark.django_db
def test_tool_written_kv_value_never_stored_in_clear(alice: Any) -> None:
    thread = _thread(alice)
    state = async_to_sync(Engine(DjangoStore(), ListSink()).thread_state)(str(thread.pk))
    async_to_sync(state.set_value)("cache", {"token": INSTANCE_SECRET, "mine": OWN_SECRET})
    assert ThreadValue.objects.get(thread=thread, key="cache").value == {
        "token": "[REDACTED]",
        "mine": "[REDACTED:OWN_KEY]",
    }


@pytest.mark.django_db
def test_spec_get_value_returns_a_secret_holding_value_exactly_while_it_is_sealed_at_rest(
    as_: Any, alice: Any
) -> None:
    """Spec 0.15 getValue: "Values are returned exactly as they were stored". A value holding
    a secret comes back exactly, to a later execution too (a new engine over the database),
    while the database holds it only sealed and the API shows it redacted."""
    thread = _thread(alice)
    exact = {"token": INSTANCE_SECRET, "mine": OWN_SECRET, "n": [1, 2.5, None, True]}
    state = async_to_sync(Engine(DjangoStore(), ListSink()).thread_state)(str(thread.pk))
    async_to_sync(state.set_value)("cache", exact)
    later = async_to_sync(Engine(DjangoStore(), ListSink()).thread_state)(str(thread.pk))
    assert async_to_sync(later.get_value)("cache") == exact
    assert async_to_sync(later.list_values)("ca") == {"cache": exact}
    assert _stored_text_hits() == []
    shown = as_(alice).get(f"/api/threads/{thread.pk}/kv?key=cache")
    assert shown.json()["value"] == {
        "token": "[REDACTED]",
        "mine": "[REDACTED:OWN_KEY]",
        "n": [1, 2.5, None, True],
    }


@pytest.mark.django_db
def test_a_value_written_over_the_api_replaces_a_tools_sealed_exact_value(
    as_: Any, alice: Any
) -> None:
    thread = _thread(alice)
    state = async_to_sync(Engine(DjangoStore(), ListSink()).thread_state)(str(thread.pk))
    async_to_sync(state.set_value)("cache", {"token": INSTANCE_SECRET})
    written = as_(alice).post_json(
        f"/api/threads/{thread.pk}/kv", {"key": "cache", "value": {"token": "fresh"}}
    )
    assert written.status_code == 200, written.content
    assert async_to_sync(state.get_value)("cache") == {"token": "fresh"}


@pytest.mark.django_db
def test_redaction_marker_never_names_a_secret_the_caller_does_not_own(
    as_: Any, alice: Any
) -> None:
    """Echoing a guess of the operator's secret tells neither its name nor which tier."""
    thread = _thread(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}"
    client.post_json(base + "/messages", {"content": f"is it {INSTANCE_SECRET}?"})
    client.post_json(base + "/kv", {"key": "guess", "value": INSTANCE_SECRET})
    for url in (base + "/messages", base + "/kv?key=guess", "/api/threads", base):
        body = client.get(url).content.decode()
        assert "INSTANCE_CANARY" not in body, url
        assert INSTANCE_SECRET not in body, url
    # Her own secret keeps its name: she owns it, and it does not depend on the guess.
    client.post_json(base + "/kv", {"key": "own", "value": OWN_SECRET})
    assert client.get(base + "/kv?key=own").json()["value"] == "[REDACTED:OWN_KEY]"


@pytest.mark.django_db
def test_redaction_marker_for_a_value_shared_with_an_operator_secret_names_only_the_own(
    as_: Any, alice: Any
) -> None:
    """A user who stores a guess as her own secret sees her own name whether or not the guess
    equals an instance secret: the marker never differs on a match."""
    define_agent("helper")
    _plant_instance()
    thread = thread_create(user=alice, agent_name="helper", env={"MINE": INSTANCE_SECRET})
    client = as_(alice)
    client.post_json(f"/api/threads/{thread.pk}/kv", {"key": "g", "value": INSTANCE_SECRET})
    assert ThreadValue.objects.get(thread=thread, key="g").value == "[REDACTED:MINE]"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_typed_secret_never_sent_in_thread_activity_or_message_frames() -> None:
    @sync_to_async
    def setup() -> tuple[Any, str, str]:
        user = get_user_model().objects.create(username="alice")
        thread = _thread(user)
        _, raw = api_key_create(user=user, name="ws")
        return user, str(thread.pk), raw

    user, thread_id, key = await setup()
    headers = [(b"authorization", f"Bearer {key}".encode())]
    registry = WebsocketCommunicator(application, "/api/events", headers=headers)
    stream = WebsocketCommunicator(application, f"/api/threads/{thread_id}/stream", headers=headers)
    assert (await registry.connect())[0] and (await stream.connect())[0]

    @sync_to_async
    def post() -> None:
        message_post(thread=Thread.objects.get(pk=thread_id), role="user", content=TYPED)

    await post()
    activity = await _frame_of(registry, "thread_activity")
    assert activity["last_message_preview"] == SHOWN
    message = await _frame_of(stream, "message_data")
    assert not CANARIES.contains(json.dumps(message)) and SHOWN in json.dumps(message)
    for communicator in (registry, stream):
        await communicator.disconnect()


async def _frame_of(communicator: WebsocketCommunicator, kind: str) -> dict[str, Any]:
    """The first frame of type ``kind``; every frame before it is checked for the canaries."""
    while True:
        raw = await communicator.receive_from(timeout=10)
        assert not CANARIES.contains(raw), raw
        assert "INSTANCE_CANARY" not in raw, raw
        frame = json.loads(raw)
        if frame.get("type") == kind:
            return dict(frame)


@pytest.mark.django_db
def test_typed_secret_stored_in_clear_before_the_fix_is_redacted_by_the_backfill(
    alice: Any,
) -> None:
    thread = _thread(alice)
    other = thread_create(user=alice, agent_name="helper")
    # Rows as earlier versions stored them: written around the services.
    Thread.objects.filter(pk=thread.pk).update(last_message_preview=TYPED)
    QueuedMessage.objects.create(thread=thread, role="user", content=TYPED)
    Message.objects.create(thread=thread, role="user", content=TYPED, created_at=5)
    ThreadValue.objects.create(thread=thread, key="k", value={"v": [TYPED]}, updated_at=1)
    ThreadValue.objects.create(thread=other, key="k", value=INSTANCE_SECRET, updated_at=1)
    out = io.StringIO()
    call_command("redact_typed_text", stdout=out)
    assert "redacted: 1 previews, 1 queued, 1 messages, 2 values" in out.getvalue()
    assert _stored_text_hits() == []
    assert ThreadValue.objects.get(thread=thread).value == {"v": [SHOWN]}
    # Other threads do not own this thread's OWN_KEY, but every thread redacts instance values.
    assert ThreadValue.objects.get(thread=other).value == "[REDACTED]"
    out = io.StringIO()
    call_command("redact_typed_text", stdout=out)
    assert "redacted: 0 previews, 0 queued, 0 messages, 0 values" in out.getvalue()
