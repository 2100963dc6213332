"""The agent's policy for a message posted while a session runs (docs/automation.md,
"Mid-run messages"): queue (read at the next step), enqueue (a turn of its own after
the session), interrupt (stop, keep what was written, answer), reject (409).

Messages are posted over the HTTP API while a real session job runs; the live frames
are read from the thread's group as the WebSocket consumer receives them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pydantic import ValidationError

from agents_app.models import Agent, Message, QueuedMessage, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.rows import all_definitions
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import _api_hosts, client_for, scripted_model  # noqa: F401
from tests.agents_app.api.test_api_sessions import Listener, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

LOOKUP = {"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]}


def _define(policy: str, script: list[dict[str, Any]]) -> None:
    model = scripted_model("m", script)
    prompt = PromptDefinition(
        name="p", model="m", prompt="You help.", include_chat=True, tools=["lookup_order"]
    )
    agent = AgentDefinition(name="helper", side_a=SideConfig(prompt="p"), mid_run_messages=policy)
    save_definitions([("model", model), ("prompt", prompt), ("agent", agent)])


@sync_to_async
def _setup(user: Any, policy: str, script: list[dict[str, Any]]) -> tuple[Any, Any]:
    _define(policy, script)
    return thread_create(user=user, agent_name="helper"), client_for(user)


@sync_to_async
def _post(client: Any, thread: Any, content: str) -> Any:
    return client.post_json(f"/api/threads/{thread.pk}/messages", {"content": content})


@sync_to_async
def _session_id(thread: Any) -> str:
    row = ThreadSession.objects.filter(thread=thread, status__in=["queued", "running"]).first()
    assert row is not None
    return str(row.pk)


@sync_to_async
def _transcript(thread: Any) -> list[tuple[str, str | None, str | None]]:
    rows = Message.objects.filter(thread=thread).order_by("created_at")
    return [(m.role, m.status, m.content or None) for m in rows]


@sync_to_async
def _statuses(thread: Any) -> list[str]:
    rows = ThreadSession.objects.filter(thread=thread).order_by("created_at")
    return list(rows.values_list("status", flat=True))


async def _started(thread: Any, what: str) -> None:
    """Wait until the session's first request is in flight (a pending assistant row)."""

    @sync_to_async
    def pending() -> bool:
        return Message.objects.filter(thread=thread, role="assistant", status="pending").exists()

    await wait_for(pending, what)


async def _run_with_post(thread: Any, client: Any, content: str) -> tuple[Any, list[Any]]:
    """Run the session of the first message and post ``content`` while its first request is
    in flight; the HTTP answer and the frames of the whole run."""
    listener = await Listener().join(thread)
    assert (await _post(client, thread, "first")).status_code == 202
    job = asyncio.create_task(run_session_job(await _session_id(thread)))
    await _started(thread, "the first request to be sent")
    answer = await _post(client, thread, content)
    await asyncio.wait_for(job, 20)
    return answer, await listener.drain()


def _queued_frame(frames: list[dict[str, Any]], content: str) -> dict[str, Any]:
    return next(
        f["data"]
        for f in frames
        if f["type"] == "message_data"
        and f["data"].get("content") == content
        and f["data"].get("status") == "pending"
    )


async def test_queue_default_reads_a_mid_run_message_at_the_next_step(alice: Any) -> None:
    script = [{**LOOKUP, "delayMs": 400}, {"content": "shipped, and noted"}]
    thread, client = await _setup(alice, "queue", script)
    answer, frames = await _run_with_post(thread, client, "also: gift wrap")
    assert answer.status_code == 202
    transcript = await _transcript(thread)
    # Drained before the second step of the same session: the model's second request saw it.
    assert transcript[-2:] == [
        ("user", "completed", "also: gift wrap"),
        ("assistant", "completed", "shipped, and noted"),
    ]
    assert await _statuses(thread) == ["completed"]
    assert "mid_run" not in _queued_frame(frames, "also: gift wrap")["metadata"]


async def test_enqueue_runs_a_mid_run_message_as_a_new_turn_after_the_session(
    alice: Any,
) -> None:
    script = [{**LOOKUP, "delayMs": 400}, {"content": "shipped"}, {"content": "gift wrap added"}]
    thread, client = await _setup(alice, "enqueue", script)
    answer, frames = await _run_with_post(thread, client, "also: gift wrap")
    assert answer.status_code == 202 and answer.json()["messageId"]
    transcript = await _transcript(thread)
    assert transcript[-3:] == [
        ("assistant", "completed", "shipped"),
        ("user", "completed", "also: gift wrap"),
        ("assistant", "completed", "gift wrap added"),
    ]
    assert await _statuses(thread) == ["completed", "completed"]
    assert _queued_frame(frames, "also: gift wrap")["metadata"]["mid_run"] == "enqueue"
    # On the wire: the first session's "stopped" comes before the new message is stored.
    kinds = [(f["type"], (f.get("data") or {}).get("content")) for f in frames]
    first_end = kinds.index(("stopped", None))
    assert ("message_data", "also: gift wrap") in kinds[first_end:]


async def test_interrupt_stops_the_session_keeping_its_output_then_answers(
    alice: Any,
) -> None:
    # The request the interrupt cuts short consumed no scripted response (as for a stop), so
    # the new session's request takes that same response.
    script = [LOOKUP, {"content": "the new answer", "delayMs": 3000}]
    thread, client = await _setup(alice, "interrupt", script)
    listener = await Listener().join(thread)
    assert (await _post(client, thread, "first")).status_code == 202
    job = asyncio.create_task(run_session_job(await _session_id(thread)))

    @sync_to_async
    def second_request() -> bool:
        return Message.objects.filter(thread=thread, role="tool").exists() and (
            Message.objects.filter(thread=thread, role="assistant", status="pending").exists()
        )

    await wait_for(second_request, "the second request to be in flight")
    answer = await _post(client, thread, "stop, new question")
    assert answer.status_code == 202
    await asyncio.wait_for(job, 20)
    transcript = await _transcript(thread)
    roles = [row[0] for row in transcript]
    # Kept: the first step's tool call and result; then the stop, the new message, its answer.
    assert roles[:3] == ["user", "assistant", "tool"]
    assert ("system", "completed", "Execution stopped by user") in transcript
    assert transcript[-2:] == [
        ("user", "completed", "stop, new question"),
        ("assistant", "completed", "the new answer"),
    ]
    statuses = await _statuses(thread)
    assert statuses == ["stopped", "completed"]
    frames = await listener.drain()
    assert _queued_frame(frames, "stop, new question")["metadata"]["mid_run"] == "interrupt"
    stopped = [i for i, f in enumerate(frames) if f["type"] == "stopped"]
    assert len(stopped) == 2  # the interrupted session's end, then the answer's
    assert not await sync_to_async(QueuedMessage.objects.exists)()
    # The stop notice says a newer message cut the reply, not a person's Stop (the chat's
    # words, issue #55 item 8).
    notice = await sync_to_async(
        lambda: Message.objects.get(thread=thread, role="system").metadata
    )()
    assert notice == {"stopped_by_user": True, "interrupted_by_message": True}


async def test_a_stop_with_no_interrupting_message_is_a_persons_stop(alice: Any) -> None:
    from agents_app.services.sessions.lifecycle import stop_cleanup

    thread, _ = await _setup(alice, "interrupt", [LOOKUP])
    await sync_to_async(stop_cleanup)(str(thread.pk), key=None)
    notice = await sync_to_async(
        lambda: Message.objects.get(thread=thread, role="system").metadata
    )()
    assert notice == {"stopped_by_user": True}


async def test_reject_answers_409_and_stores_nothing(alice: Any) -> None:
    thread, client = await _setup(alice, "reject", [{"content": "done", "delayMs": 400}])
    answer, frames = await _run_with_post(thread, client, "are you done?")
    assert answer.status_code == 409
    assert "takes no new message until it has finished" in answer.json()["error"]
    assert await _transcript(thread) == [
        ("user", "completed", "first"),
        ("assistant", "completed", "done"),
    ]
    assert not [f for f in frames if (f.get("data") or {}).get("content") == "are you done?"]
    # Idle again: the same post is accepted.
    assert (await _post(client, thread, "are you done?")).status_code == 202


def test_the_policy_round_trips_through_definitions_and_refuses_unknown_values(db: Any) -> None:
    _define("enqueue", [{"content": "x"}])
    assert Agent.objects.get(name="helper").mid_run_messages == "enqueue"
    exported = next(d for d in all_definitions()["agents"] if d.name == "helper")
    assert exported.dump()["midRunMessages"] == "enqueue"
    with pytest.raises(ValidationError, match="midRunMessages"):
        AgentDefinition.model_validate(
            {"name": "x", "sideA": {"prompt": "p"}, "midRunMessages": "later"}
        )
