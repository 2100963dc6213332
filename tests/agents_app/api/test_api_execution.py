"""Stop, continue and effects over HTTP (sessions themselves: test_api_sessions.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pydantic import BaseModel

from agents_app.base.code_registry import reset_registry
from agents_app.models import Log, Message, QueuedMessage, ScheduledEffect, Thread, ThreadSession
from runtime.tools.registry import Registry, define_effect
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def test_stop_on_an_idle_thread_tidies_up_and_parks_the_queue(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    Message.objects.create(thread=thread, role="assistant", tool_calls=[call], created_at=10)
    Message.objects.create(thread=thread, role="assistant", status="pending", created_at=11)
    Log.objects.create(thread=thread, is_complete=False)
    response = as_(alice).post(f"/api/threads/{thread.pk}/stop")
    assert response.status_code == 200
    assert response.json() == {"status": "stopped", "message": "Thread execution stopped"}
    thread.refresh_from_db()
    assert thread.stopped is True
    rows = list(Message.objects.filter(thread=thread).order_by("created_at"))
    assert [(m.role, m.status, m.content) for m in rows] == [
        ("assistant", "completed", None),
        ("assistant", "failed", None),
        ("tool", "completed", "Execution stopped by user"),
        ("system", "completed", "Execution stopped by user"),
    ]
    assert rows[2].tool_call_id == "call_1" and rows[2].tool_status == "error"
    assert Log.objects.get().error_type == "stopped"  # a stop is no failure (issue #40)


def test_stop_while_a_session_is_active_leaves_the_tidying_to_its_worker(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    as_(alice).post_json(f"/api/threads/{thread.pk}/messages", {"content": "hi"})
    as_(alice).post(f"/api/threads/{thread.pk}/stop")
    assert Thread.objects.get(pk=thread.pk).stopped is True
    assert not Message.objects.filter(role="system").exists()
    assert QueuedMessage.objects.count() == 1


def test_continue_clears_the_flag_and_requests_a_session(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    Thread.objects.filter(pk=thread.pk).update(stopped=True)
    response = as_(alice).post_json(f"/api/threads/{thread.pk}/continue", {"side": "b"})
    assert response.status_code == 202
    body = response.json()
    session = ThreadSession.objects.get()
    assert body["status"] == "queued" and body["queueId"] == str(session.pk)
    assert session.side == "b" and session.status == "queued"
    assert Thread.objects.get(pk=thread.pk).stopped is False
    assert as_(alice).post(f"/api/threads/{thread.pk}/continue").status_code == 202
    assert ThreadSession.objects.count() == 1  # one active session at most


@pytest.mark.parametrize("side", ["c", 1, "A"])
def test_continue_rejects_bad_sides(as_: Any, alice: Any, thread_of: Any, side: Any) -> None:
    thread = thread_of(alice)
    response = as_(alice).post_json(f"/api/threads/{thread.pk}/continue", {"side": side})
    assert response.status_code == 400
    assert response.json() == {"error": "side must be 'a' or 'b'"}


class NoteArgs(BaseModel):
    text: str


ran: list[str] = []


@pytest.fixture
def effects_registry() -> Any:
    async def note(state: Any, args: NoteArgs) -> None:
        await state.set_value("note", args.text)
        ran.append(args.text)

    async def broken(state: Any, args: Any) -> None:
        raise RuntimeError("boom")

    reset_registry(
        Registry(define_effect("Write a note", NoteArgs, note), define_effect("Fails", broken))
    )
    ran.clear()
    yield
    reset_registry(None)


def _effect(thread: Thread, name: str = "note", **kw: Any) -> ScheduledEffect:
    return ScheduledEffect.objects.create(
        thread=thread,
        name=name,
        args={"text": "hi"},
        due_at=timezone.now() + timedelta(hours=1),
        **kw,
    )


def test_effects_list_shows_upcoming_first_with_ms_times(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    done = _effect(thread, status="completed")
    pending = _effect(thread)
    body = as_(alice).get(f"/api/threads/{thread.pk}/effects").json()
    assert [e["id"] for e in body["effects"]] == [str(pending.pk), str(done.pk)]
    assert body["total"] == 2 and body["upcomingCount"] == 1
    assert body["effects"][0]["scheduledAt"] > 1_000_000_000_000  # milliseconds
    assert body["effects"][0]["args"] == {"text": "hi"}


def test_cancel_only_pending_effects(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    effect = _effect(thread)
    url = f"/api/threads/{thread.pk}/effects/{effect.pk}/cancel"
    assert as_(alice).post(url).json() == {
        "action": "canceled",
        "id": str(effect.pk),
        "canceledBy": "user",
    }
    assert ScheduledEffect.objects.get(pk=effect.pk).status == "user_canceled"
    again = as_(alice).post(url)
    assert again.status_code == 409
    assert again.json() == {"error": f"No pending effect found for ID {effect.pk}"}


def test_run_now_and_replay(as_: Any, alice: Any, thread_of: Any, effects_registry: Any) -> None:
    thread = thread_of(alice)
    effect = _effect(thread)
    client = as_(alice)
    ran_now = client.post(f"/api/threads/{thread.pk}/effects/{effect.pk}/run").json()
    assert ran_now["action"] == "ran" and ran_now["status"] == "completed"
    assert ran == ["hi"]
    effect.refresh_from_db()
    assert effect.status == "completed" and effect.manual_run is True
    replay = client.post(f"/api/threads/{thread.pk}/effects/{effect.pk}/run").json()
    assert replay["action"] == "replayed"
    assert ScheduledEffect.objects.get(pk=replay["replayedId"]).replayed_from_id == effect.pk
    assert ran == ["hi", "hi"]


def test_a_failing_or_unknown_effect_is_recorded_not_a_500(
    as_: Any, alice: Any, thread_of: Any, effects_registry: Any
) -> None:
    thread = thread_of(alice)
    for name, error in (("broken", "RuntimeError: boom"), ("ghost", "Effect not found: ghost")):
        effect = _effect(thread, name=name)
        body = as_(alice).post(f"/api/threads/{thread.pk}/effects/{effect.pk}/run").json()
        assert body["status"] == "failed" and body["error"] == error


def test_unknown_effect_ids_are_404(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    response = as_(alice).post(f"/api/threads/{thread.pk}/effects/nope/cancel")
    assert response.status_code == 404
