"""Issue #54, row I2: a ``subagent_create`` whose ``scopedEnv`` values are missing waits on a
variables request (``GET|POST /api/threads/{id}/variables/{requestId}``), observed at the
edge: HTTP answers, the child thread's env, the parent's tool result, and where a planted
secret value never shows up (the GET, the stored rows and logs, the worker's log lines).
Sessions run in-process (``run_session_job``) over PostgreSQL; the model is the scripted
``test`` provider."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.management import call_command

from agents_app.models import EnvValue, Log, Message, Thread, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.sessions import tool_waits
from studio.asgi import application
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import client_for

SECRET = "shop-canary-Zq81/x+y=k"
CREATE = {"agent": "researcher", "name": "Scout", "message": "Find sources"}
FILES: dict[str, Any] = {
    "models/m": {
        "name": "m",
        "provider": "test",
        "model": "scripted",
        "script": [
            {"toolCalls": [{"name": "subagent_create", "arguments": CREATE}]},
            {"content": "I asked the researcher."},
        ],
    },
    "models/mc": {
        "name": "mc",
        "provider": "test",
        "model": "scripted",
        # The child's reply carries the secret it was given: stored redacted, here and upstream.
        "script": [{"content": f"three sources (token {SECRET})"}],
    },
    "prompts/boss_prompt": {"name": "boss_prompt", "model": "m", "prompt": "You lead."},
    "prompts/helper_prompt": {"name": "helper_prompt", "model": "mc", "prompt": "You help."},
    "agents/helper": {
        "name": "helper",
        "exposeAsTool": True,
        "toolDescription": "Looks things up",
        "sideA": {"prompt": "helper_prompt"},
        "sideB": {"human": True},
    },
    "agents/boss": {
        "name": "boss",
        "sideA": {
            "prompt": "boss_prompt",
            "subagents": [
                {
                    "agent": "helper",
                    "as": "researcher",
                    "description": "Digs up sources",
                    "blocking": True,
                    "scopedEnv": ["REGION", "SHOP_TOKEN"],
                }
            ],
        },
        "sideB": {"human": True},
    },
}


def _import(root: Path) -> None:
    for label, data in FILES.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    err = io.StringIO()
    try:
        call_command("import_definitions", str(root), stdout=io.StringIO(), stderr=err)
    finally:
        assert not err.getvalue(), err.getvalue()


def _session(thread_id: str) -> None:
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def _parked(tmp_path: Path, client: Any) -> tuple[str, str]:
    """A boss thread whose ``subagent_create`` waits on a variables request: (thread, request)."""
    _import(tmp_path)
    thread_id = client.post_json("/api/threads", {"agent_id": "boss"}).json()["threadId"]
    assert client.post_json(f"/api/threads/{thread_id}/messages", {"content": "go"}).status_code
    _session(thread_id)
    assert list(
        ThreadSession.objects.filter(thread_id=thread_id).values_list("status", flat=True)
    ) == ["parked"]
    [pending] = client.get(f"/api/threads/{thread_id}/pending-tool-calls").json()["pending"]
    assert (pending["tool"], pending["kind"]) == ("subagent_create", "variables")
    return thread_id, pending["variables_request_id"]


@pytest.mark.django_db(transaction=True)
def test_I2_missing_scoped_env_waits_on_a_request_whose_answer_boots_the_child(
    tmp_path: Path, as_: Any, alice: Any, bob: Any, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    client = as_(alice)
    thread_id, request_id = _parked(tmp_path, client)
    url = f"/api/threads/{thread_id}/variables/{request_id}"

    asked = client.get(url)
    assert asked.status_code == 200, asked.text
    body = asked.json()
    assert body["required"] == ["REGION", "SHOP_TOKEN"]
    assert body["missing"] == ["REGION", "SHOP_TOKEN"]
    assert (body["agent_name"], body["registry_agent_name"], body["status"]) == (
        "helper",
        "researcher",
        "pending",
    )
    child_id = body["child_thread_id"]
    assert Thread.objects.get(pk=child_id).parent_id is not None
    assert not Message.objects.filter(thread_id=child_id).exists()  # not started yet

    # Someone else may neither read nor answer it.
    assert as_(bob).get(url).status_code in (403, 404)
    assert as_(bob).post_json(url, {"values": {"REGION": "x"}}).status_code in (403, 404)
    # An answer lacking a value is refused with a sentence naming it.
    short = client.post_json(url, {"values": {"REGION": "eu-west"}})
    assert short.status_code == 400
    assert "Missing required scoped environment variables: SHOP_TOKEN" in short.json()["error"]
    assert client.post_json(url, {"values": "nope"}).status_code == 400
    assert client.get(f"/api/threads/{thread_id}/variables/{child_id}").status_code == 404

    answered = client.post_json(
        url,
        {"values": {"REGION": "eu-west", "SHOP_TOKEN": SECRET}, "types": {"REGION": "text"}},
    )
    assert answered.status_code == 200, answered.text
    assert answered.json() == {
        "request_id": request_id,
        "child_thread_id": child_id,
        "status": "success",
        "resumed": True,
    }
    stored = {e.key: (e.value_type, e.value) for e in EnvValue.objects.filter(thread_id=child_id)}
    assert stored == {"REGION": ("text", "eu-west"), "SHOP_TOKEN": ("secret", SECRET)}

    _session(thread_id)

    tool_row = Message.objects.get(thread_id=thread_id, role="tool")
    assert (tool_row.status, tool_row.tool_status) == ("completed", "success")
    assert tool_row.content == (
        f"three sources (token [REDACTED:SHOP_TOKEN])\n\nReference: {child_id}"
    )
    replies = Message.objects.filter(thread_id=thread_id, role="assistant").order_by("created_at")
    assert [m.content for m in replies if m.content] == ["I asked the researcher."]
    [entry] = client.get(f"/api/threads/{thread_id}/subagents").json()["subagents"]
    assert (entry["id"], entry["relationship"]) == (child_id, "researcher")
    assert client.get(url).json()["status"] == "supplied"
    again = client.post_json(url, {"values": {"REGION": "x", "SHOP_TOKEN": "y"}})
    assert again.status_code == 409

    # The secret is on the child's env and nowhere else.
    shown = [client.get(url).text, client.get(f"/api/threads/{child_id}").text]
    shown.append(client.get(f"/api/threads/{thread_id}/messages?limit=100").text)
    rows = [
        json.dumps([m.content, m.metadata])
        for m in Message.objects.filter(thread_id__in=[thread_id, child_id])
    ]
    logs = [
        json.dumps([g.request_body, g.response_body, g.error], default=str)
        for g in Log.objects.filter(thread_id__in=[thread_id, child_id])
    ]
    for text in [*shown, *rows, *logs, caplog.text]:
        assert SECRET not in text


@pytest.mark.django_db(transaction=True)
def test_I2_a_declined_request_fails_the_call_with_a_sentence(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    client = as_(alice)
    thread_id, request_id = _parked(tmp_path, client)
    url = f"/api/threads/{thread_id}/variables/{request_id}"
    child_id = client.get(url).json()["child_thread_id"]
    # The tool-result route does not take it: it names the route that does.
    wrong = client.post_json(
        f"/api/threads/{thread_id}/tool-result",
        {"tool_call_id": Message.objects.get(pk=request_id).tool_call_id, "approve": True},
    )
    assert wrong.status_code == 400 and url in wrong.json()["error"]

    declined = client.post_json(url, {"decline": True, "reason": "not today"})
    assert declined.status_code == 200, declined.text
    assert declined.json()["status"] == "resumed"
    _session(thread_id)

    tool_row = Message.objects.get(thread_id=thread_id, role="tool")
    assert tool_row.tool_status == "error"
    assert 'declined to provide the scoped environment variables for "helper"' in tool_row.content
    assert "not today" in tool_row.content
    assert client.get(url).json()["status"] == "declined"
    assert Thread.objects.get(pk=child_id).terminated_at is not None
    assert not EnvValue.objects.filter(thread_id=child_id).exists()


@pytest.mark.django_db(transaction=True)
def test_I2_an_unanswered_request_runs_out_like_any_tool_wait(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    client = as_(alice)
    thread_id, request_id = _parked(tmp_path, client)
    url = f"/api/threads/{thread_id}/variables/{request_id}"
    row = Message.objects.get(pk=request_id)
    row.metadata["tool_wait"]["expires_at"] = 1  # long past
    row.save(update_fields=["metadata"])

    assert tool_waits.expire_due() == 1  # what the sweep runs
    _session(thread_id)

    row.refresh_from_db()
    assert row.tool_status == "error"
    assert row.content.endswith("The tool call timed out waiting for the requested variables.")
    assert client.get(url).json()["status"] == "expired"
    assert client.post_json(url, {"values": {"REGION": "a", "SHOP_TOKEN": "b"}}).status_code == 409
    child_id = row.metadata["tool_wait"]["child_thread_id"]
    assert Thread.objects.get(pk=child_id).terminated_at is not None


async def _until(
    communicator: WebsocketCommunicator, seen: list[dict[str, Any]], wanted: Any, what: str
) -> dict[str, Any]:
    """Frames off the socket until one matches (each read bounded by the socket's timeout)."""
    while True:
        try:
            frame = json.loads(await communicator.receive_from(timeout=30))
        except TimeoutError:
            raise AssertionError(f"no frame: {what}; saw {seen}") from None
        seen.append(frame)
        if wanted(frame):
            return frame


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_I2_the_stream_says_a_request_is_pending_and_never_carries_the_value(
    tmp_path: Path, alice: Any
) -> None:
    client = await sync_to_async(client_for)(alice)
    await sync_to_async(_import)(tmp_path)
    created = await sync_to_async(client.post_json)("/api/threads", {"agent_id": "boss"})
    thread_id = created.json()["threadId"]
    _, key = await sync_to_async(api_key_create)(user=alice, name="ws")
    communicator = WebsocketCommunicator(
        application,
        f"/api/threads/{thread_id}/stream",
        headers=[(b"authorization", f"Bearer {key}".encode())],
    )
    connected, _ = await communicator.connect()
    assert connected
    seen: list[dict[str, Any]] = []
    try:
        await sync_to_async(client.post_json)(
            f"/api/threads/{thread_id}/messages", {"content": "go"}
        )
        await sync_to_async(_session)(thread_id)
        waiting = await _until(
            communicator,
            seen,
            lambda f: f["type"] == "event" and f.get("eventType") == "tool_call_waiting",
            "tool_call_waiting",
        )
        assert waiting["data"]["kind"] == "variables"
        assert waiting["data"]["missing"] == ["REGION", "SHOP_TOKEN"]
        request_id = waiting["data"]["message_id"]
        answer = await sync_to_async(client.post_json)(
            f"/api/threads/{thread_id}/variables/{request_id}",
            {"values": {"REGION": "eu-west", "SHOP_TOKEN": SECRET}},
        )
        assert answer.status_code == 200, answer.text
        await sync_to_async(_session)(thread_id)
        await _until(
            communicator,
            seen,
            lambda f: (
                f["type"] == "message_data"
                and f["data"].get("content") == "I asked the researcher."
            ),
            "the parent's final reply",
        )
    finally:
        await communicator.disconnect()
    decided = [f for f in seen if f["type"] == "message_data" and f["data"].get("id") == request_id]
    assert decided, seen  # the answered row went out on the stream too
    assert SECRET not in json.dumps(seen)
