"""Each mid-run policy over real HTTP and a real WebSocket (docs/automation.md, "Mid-run
messages"): Daphne, a Celery worker, PostgreSQL and Redis, as in production.

The agents (tests/integration/seed.py) share slowpoke's script: the first reply takes 1.5 s,
so the second message is posted while the first session's request is in flight.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents_app.orchestration.test_mid_run_messages import _queued_frame
from tests.integration.stack import Stack, wait_until
from tests.integration.test_live_sessions import (
    Frame,
    Watch,
    assistant_pending,
    messages,
    new_thread,
    post,
)

pytestmark = pytest.mark.integration


def _answered(watch: Watch, text: str) -> None:
    """Wait for the completed reply ``text`` on the socket."""
    watch.until(
        lambda f: (
            f["type"] == "message_data"
            and f["data"].get("content") == text
            and f["data"].get("status") == "completed"
        ),
        f"the frame of the reply {text!r}",
    )


def _stopped(watch: Watch, count: int) -> list[Frame]:
    """Wait for the ``count``-th session end on the socket; the session ends seen."""

    def ended(frame: Frame) -> bool:
        return len([f for f in watch.frames if f["type"] == "stopped"]) >= count

    if not ended({}):
        watch.until(ended, f"{count} sessions to end")
    return [f for f in watch.frames if f["type"] == "stopped"]


def _in_flight(stack: Stack, agent: str) -> tuple[str, Watch]:
    thread_id = new_thread(stack, agent)
    watch = Watch(stack, f"/api/threads/{thread_id}/stream")
    post(stack, thread_id, "one")
    wait_until(lambda: assistant_pending(stack, thread_id), "the first reply to start")
    return thread_id, watch


def test_enqueue_answers_the_new_message_in_a_session_of_its_own(stack: Stack, worker: Any) -> None:
    worker("w-midrun")
    thread_id, watch = _in_flight(stack, "slowpoke-enqueue")
    with watch:
        post(stack, thread_id, "two")
        expected = [
            ("user", "completed", "one"),
            ("assistant", "completed", "first answer"),
            ("user", "completed", "two"),
            ("assistant", "completed", "second answer"),
        ]
        wait_until(lambda: messages(stack, thread_id) == expected, "both answers, in order")
        _answered(watch, "second answer")
        ends = _stopped(watch, 2)  # two sessions, each ended on the socket
    assert _queued_frame(watch.frames, "two")["metadata"]["mid_run"] == "enqueue"
    assert len({f["stream"] for f in ends}) == 2


def test_interrupt_stops_the_session_keeping_its_output_then_answers(
    stack: Stack, worker: Any
) -> None:
    worker("w-midrun")
    thread_id, watch = _in_flight(stack, "slowpoke-interrupt")
    # The request the interrupt cuts short consumed no scripted response (as for a stop): the
    # new session's request takes that same response, "first answer".
    expected = [
        ("user", "completed", "one"),
        ("assistant", "failed", None),
        ("system", "completed", "Execution stopped by user"),
        ("user", "completed", "stop, new question"),
        ("assistant", "completed", "first answer"),
    ]
    with watch:
        post(stack, thread_id, "stop, new question")
        wait_until(lambda: messages(stack, thread_id) == expected, "the new question's answer")
        _answered(watch, "first answer")
        ends = _stopped(watch, 2)  # the interrupted session's end, then the answer's
    assert _queued_frame(watch.frames, "stop, new question")["metadata"]["mid_run"] == "interrupt"
    assert ends[0]["reason"] == "aborted_by_user"


def test_reject_answers_409_and_the_session_goes_on(stack: Stack, worker: Any) -> None:
    worker("w-midrun")
    thread_id, watch = _in_flight(stack, "slowpoke-reject")
    with watch:
        answer = stack.client("alice").post(
            f"/api/threads/{thread_id}/messages", json={"content": "are you done?"}
        )
        assert answer.status_code == 409
        assert "takes no new message until it has finished" in answer.json()["error"]
        watch.until(lambda f: f["type"] == "stopped", "the session's end")
    assert messages(stack, thread_id) == [
        ("user", "completed", "one"),
        ("assistant", "completed", "first answer"),
    ]
    assert not [f for f in watch.frames if (f.get("data") or {}).get("content") == "are you done?"]
