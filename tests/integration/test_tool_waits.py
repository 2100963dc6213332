"""Tool calls that wait, end to end: Daphne, Celery workers (beat for expiry), PostgreSQL, Redis.

The seeded agents (tests/integration/seed.py) call ``lookup_order`` once, marked
``requiresApproval`` (or ``client``), then answer "all done". No timing assertions:
every wait is a bounded poll.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from tests.integration.stack import Process, Stack, wait_until
from tests.integration.test_live_sessions import Watch, new_thread, post

pytestmark = pytest.mark.integration
CALL = "call_wait_1"


def pending(stack: Stack, thread_id: str) -> list[dict[str, Any]]:
    response = stack.client("alice").get(f"/api/threads/{thread_id}/pending-tool-calls")
    assert response.status_code == 200, response.text
    return list(response.json()["pending"])


def tool_row(stack: Stack, thread_id: str) -> dict[str, Any] | None:
    page = stack.client("alice").get(f"/api/threads/{thread_id}/messages?limit=100").json()
    rows = [m for m in page["messages"] if m["role"] == "tool"]
    return rows[0] if rows else None


def replies(stack: Stack, thread_id: str) -> list[str]:
    page = stack.client("alice").get(f"/api/threads/{thread_id}/messages?limit=100").json()
    return [m["content"] for m in page["messages"] if m["role"] == "assistant" and m["content"]]


def session_statuses(stack: Stack, thread_id: str) -> list[str]:
    rows = stack.sql(
        "SELECT status FROM agents_app_threadsession WHERE thread_id = %s ORDER BY created_at",
        thread_id,
    )
    return [r[0] for r in rows]


def parked_thread(stack: Stack, agent: str = "approval-agent") -> str:
    thread_id = new_thread(stack, agent)
    post(stack, thread_id, "Where is my order A-1001?")
    wait_until(lambda: pending(stack, thread_id), "the call to wait for a decision")
    wait_until(lambda: session_statuses(stack, thread_id) == ["parked"], "the session to be parked")
    return thread_id


def decide(stack: Stack, thread_id: str, body: dict[str, Any]) -> httpx.Response:
    return stack.client("alice").post(
        f"/api/threads/{thread_id}/tool-result", json={"tool_call_id": CALL, **body}
    )


def test_spec_approved_call_runs_and_the_session_resumes(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "approval-agent")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "Where is my order A-1001?")
        waiting = stream.until(
            lambda f: f["type"] == "event" and f.get("eventType") == "tool_call_waiting",
            "the tool_call_waiting event",
        )
        assert waiting["data"]["name"] == "lookup_order"
        row = stream.until(
            lambda f: (
                f["type"] == "message_data"
                and f["data"]["role"] == "tool"
                and f["data"]["status"] == "pending"
            ),
            "the pending tool row",
        )
        assert row["data"]["tool_call_id"] == CALL
    [call] = pending(stack, thread_id)
    assert (call["tool"], call["args"], call["kind"]) == (
        "lookup_order",
        {"order_id": "A-1001"},
        "approval",
    )
    wait_until(lambda: session_statuses(stack, thread_id) == ["parked"], "a parked session")
    response = decide(stack, thread_id, {"approve": True})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "resumed"
    wait_until(lambda: "all done" in replies(stack, thread_id), "the session to resume")
    row_data = tool_row(stack, thread_id)
    assert row_data is not None and row_data["tool_status"] == "success"
    assert "shipped" in row_data["content"]
    assert pending(stack, thread_id) == []
    assert session_statuses(stack, thread_id) == ["completed"]


def test_spec_rejected_call_gives_the_model_the_reason(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = parked_thread(stack)
    response = decide(stack, thread_id, {"approve": False, "reason": "not this order"})
    assert response.status_code == 200, response.text
    wait_until(lambda: "all done" in replies(stack, thread_id), "the session to resume")
    row = tool_row(stack, thread_id)
    assert row is not None and row["tool_status"] == "error"
    assert "not this order" in row["content"] and "shipped" not in row["content"]


def test_spec_rejection_without_reason_is_refused_with_json(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = parked_thread(stack)
    response = decide(stack, thread_id, {"approve": False})
    assert response.status_code == 400 and "reason" in response.json()["error"]
    unknown = stack.client("alice").post(
        f"/api/threads/{thread_id}/tool-result", json={"tool_call_id": "nope", "approve": True}
    )
    assert unknown.status_code == 404 and "nope" in unknown.json()["error"]
    assert len(pending(stack, thread_id)) == 1


def test_spec_expired_call_gives_the_model_a_timeout_result(stack: Stack, worker: Any) -> None:
    worker("w1", beat=True)
    thread_id = new_thread(stack, "approval-expiring")
    post(stack, thread_id, "Where is my order A-1001?")
    wait_until(lambda: "all done" in replies(stack, thread_id), "the wait to expire", timeout=60)
    row = tool_row(stack, thread_id)
    assert row is not None and row["tool_status"] == "error" and "timed out" in row["content"]
    late = decide(stack, thread_id, {"approve": True})
    assert late.status_code == 409 and "expired" in late.json()["error"]


def test_spec_stop_while_waiting_answers_execution_stopped_by_user(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = parked_thread(stack)
    response = stack.client("alice").post(f"/api/threads/{thread_id}/stop")
    assert response.status_code == 200, response.text
    row = tool_row(stack, thread_id)
    assert row is not None and row["content"] == "Execution stopped by user"
    assert row["status"] == "completed" and row["tool_status"] == "error"
    assert pending(stack, thread_id) == []
    assert session_statuses(stack, thread_id) == ["stopped"]
    late = decide(stack, thread_id, {"approve": True})
    assert late.status_code == 409, late.text
    # the thread goes on with the next message (the stopped call is answered in history)
    post(stack, thread_id, "never mind")
    wait_until(lambda: session_statuses(stack, thread_id)[-1] == "completed", "a new session")


def test_worker_killed_while_waiting_resumes_on_another_after_approval(
    stack: Stack, worker: Any
) -> None:
    first = worker("w1")
    thread_id = parked_thread(stack)
    first.kill_hard()  # nothing holds the parked session: no worker is needed while it waits
    worker("w2")
    response = decide(stack, thread_id, {"approve": True})
    assert response.status_code == 200, response.text
    wait_until(lambda: "all done" in replies(stack, thread_id), "w2 to resume the session")
    row = tool_row(stack, thread_id)
    assert row is not None and "shipped" in row["content"]


def test_two_racing_approvals_exactly_one_wins(stack: Stack, shared_worker: Process) -> None:
    thread_id = parked_thread(stack)
    results: list[httpx.Response] = []
    barrier = threading.Barrier(2)

    def approve(body: dict[str, Any]) -> None:
        barrier.wait()
        results.append(decide(stack, thread_id, body))

    threads = [
        threading.Thread(target=approve, args=({"approve": True},)),
        threading.Thread(target=approve, args=({"approve": False, "reason": "racing"},)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 409], [r.text for r in results]
    loser = next(r for r in results if r.status_code == 409)
    assert "already decided" in loser.json()["error"]
    wait_until(lambda: "all done" in replies(stack, thread_id), "the winner's decision to run")
    assert session_statuses(stack, thread_id) == ["completed"]


def test_spec_client_tool_result_is_what_the_model_reads(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = parked_thread(stack, "client-tool-agent")
    [call] = pending(stack, thread_id)
    assert call["kind"] == "client" and call["request_permission"] is False
    wrong = decide(stack, thread_id, {"approve": True})
    assert wrong.status_code == 400 and "client" in wrong.json()["error"]
    # The reference's body: the delivery token comes from the bridge's tool_request.
    tokenless = decide(stack, thread_id, {"ok": True, "result": {"status": "at the door"}})
    assert tokenless.status_code == 400 and "delivery_token" in tokenless.json()["error"]
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as bridge:
        request = bridge.until(lambda f: f["type"] == "tool_request", "the tool_request")
    response = decide(
        stack,
        thread_id,
        {
            "ok": True,
            "result": {"status": "at the door"},
            "delivery_token": request["deliveryToken"],
        },
    )
    assert response.status_code == 200 and response.json()["status"] == "resumed", response.text
    wait_until(lambda: "all done" in replies(stack, thread_id), "the session to resume")
    row = tool_row(stack, thread_id)
    assert row is not None and "at the door" in row["content"]
