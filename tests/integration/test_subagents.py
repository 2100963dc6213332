"""Subagents end to end: scripted parents and children (tests/integration/seed.py) on the real
stack; children run as their own sessions in a Celery worker.

No timing assertions: every wait is a bounded poll that fails with a sentence.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.integration.stack import Process, Stack, wait_until
from tests.integration.test_live_sessions import Watch, assistant_pending, new_thread, post

pytestmark = pytest.mark.integration


def rows(stack: Stack, thread_id: str) -> list[dict[str, Any]]:
    page = stack.client("alice").get(
        f"/api/threads/{thread_id}/messages?limit=100&includeSilent=true"
    )
    assert page.status_code == 200, page.text
    return list(page.json()["messages"])


def registry(stack: Stack, thread_id: str, user: str = "alice") -> Any:
    return stack.client(user).get(f"/api/threads/{thread_id}/subagents")


def settled(stack: Stack, thread_id: str, last: str) -> bool:
    found = rows(stack, thread_id)
    return bool(found) and found[-1]["content"] == last and found[-1]["status"] == "completed"


def test_spec_subagent_blocking_result_registry_and_forwarded_events(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "sub-blocking-parent")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "start")
        stream.until(
            lambda f: f["type"] == "event" and f["eventType"] == "subagent_end", "subagent_end"
        )
    wait_until(lambda: settled(stack, thread_id, "parent done"), "the parent to finish")
    tool = next(m for m in rows(stack, thread_id) if m["role"] == "tool")
    child_id = tool["subagent_id"]
    assert tool["content"] == f"child result\n\nReference: {child_id}"
    events = [f for f in stream.frames if f["type"] == "event"]
    names = [f["eventType"] for f in events]
    assert (
        names.index("subagent_start") < names.index("subagent_event") < names.index("subagent_end")
    )
    start = next(f for f in events if f["eventType"] == "subagent_start")
    assert start["data"]["subagentId"] == child_id
    assert start["data"]["subagentType"] == "sub-child"
    inner = [f["data"]["innerEvent"]["type"] for f in events if f["eventType"] == "subagent_event"]
    assert "message_data" in inner
    listed = registry(stack, thread_id)
    assert listed.status_code == 200
    [entry] = listed.json()["subagents"]
    assert (entry["id"], entry["relationship"], entry["status"]) == (child_id, "sub-child", "idle")
    assert isinstance(entry["createdAt"], int)
    # The registry is owner-only, like every thread route.
    assert registry(stack, thread_id, user="bob").status_code in (403, 404)


def test_spec_subagent_non_blocking_result_arrives_later_and_parent_runs_again(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "sub-async-parent")
    post(stack, thread_id, "start")
    wait_until(lambda: settled(stack, thread_id, "the child answered"), "the parent's second run")
    found = rows(stack, thread_id)
    tool = next(m for m in found if m["role"] == "tool")
    child_id = tool["subagent_id"]
    assert tool["content"] == f"The subagent was initiated successfully. Reference: {child_id}"
    delivered = [m for m in found if m["silent"]]
    assert [m["content"] for m in delivered] == [
        f"Subagent (reference: {child_id}) has returned the following result:\n\nslow result"
    ]
    assert delivered[0]["subagent_id"] == child_id
    child = rows(stack, child_id)
    assert [(m["role"], m["content"]) for m in child] == [
        ("user", "go"),
        ("assistant", "slow result"),
    ]
    wait_until(
        lambda: registry(stack, thread_id).json()["subagents"][0]["status"] == "idle",
        "the child's status to settle",
    )


def test_spec_subagent_failure_is_delivered_as_failure(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "sub-fail-parent")
    post(stack, thread_id, "start")
    wait_until(lambda: settled(stack, thread_id, "the child failed"), "the parent's second run")
    delivered = [m for m in rows(stack, thread_id) if m["silent"]]
    child_id = delivered[0]["subagent_id"]
    assert delivered[0]["content"].startswith(
        f"Subagent (reference: {child_id}) has reported a failure:\n\n"
    )
    assert registry(stack, thread_id).json()["subagents"][0]["status"] == "failed"


def test_spec_subagent_resumable_create_or_continue_messaging_and_subtree_deletion(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "sub-continue-parent")
    post(stack, thread_id, "start")
    wait_until(lambda: settled(stack, thread_id, "created"), "the first session")
    tools = [m for m in rows(stack, thread_id) if m["role"] == "tool"]
    child_id = tools[0]["subagent_id"]
    assert tools[0]["content"] == f"answer one\n\nReference: {child_id}"
    # Blocking with maxInstances 1: the second create continues the one instance.
    assert tools[1]["tool_status"] == "success" and tools[1]["subagent_id"] == child_id
    assert tools[1]["content"] == f"answer two\n\nReference: {child_id}"
    [entry] = registry(stack, thread_id).json()["subagents"]
    assert (entry["threadName"], entry["status"]) == ("Researcher", "idle")
    post(stack, thread_id, "ask again")
    wait_until(lambda: settled(stack, thread_id, "asked again"), "the second session")
    tools = [m for m in rows(stack, thread_id) if m["role"] == "tool"]
    assert tools[-1]["content"] == f"answer three\n\nReference: {child_id}"
    assert [m["content"] for m in rows(stack, child_id)] == [
        "Q1",
        "answer one",
        "Q2",
        "answer two",
        "Q3",
        "answer three",
    ]
    # Deleting the parent deletes its subtree.
    deleted = stack.client("alice").delete(f"/api/threads/{thread_id}")
    assert deleted.status_code == 200, deleted.text
    assert set(deleted.json()["deletedThreadIds"]) == {thread_id, child_id}
    assert stack.client("alice").get(f"/api/threads/{child_id}").status_code == 404


def test_spec_subagent_child_whose_run_dies_in_the_worker_reports_a_failure(
    stack: Stack, worker: Any
) -> None:
    doomed = worker("w1")
    thread_id = new_thread(stack, "sub-crash-parent")
    post(stack, thread_id, "start")
    wait_until(lambda: settled(stack, thread_id, "waiting"), "the parent's first run")
    child_id = next(m for m in rows(stack, thread_id) if m["role"] == "tool")["subagent_id"]
    wait_until(lambda: assistant_pending(stack, child_id), "the child's request to be in flight")
    doomed.kill_hard()
    # The child's session cannot be resumed (its stored progress is unreadable): the worker
    # that takes it over fails it outside the engine.
    changed = stack.sql(
        "update agents_app_threadsession set progress = '{\"unreadable\": true}'::jsonb"
        " where thread_id = %s and status = 'running' returning id",
        uuid.UUID(child_id),
    )
    assert len(changed) == 1
    worker("w2", beat=True)  # its beat runs the sweep, which hands the stale session over
    wait_until(
        lambda: settled(stack, thread_id, "the child crashed"), "the parent's second run", 60
    )
    delivered = [m for m in rows(stack, thread_id) if m["silent"]]
    assert len(delivered) == 1 and delivered[0]["subagent_id"] == child_id
    assert delivered[0]["content"].startswith(
        f"Subagent (reference: {child_id}) has reported a failure:\n\n"
        "The agent run failed unexpectedly: "
    )
    [entry] = registry(stack, thread_id).json()["subagents"]
    assert entry["status"] == "failed"


def test_spec_session_status_reaches_the_parent_and_session_fail_is_a_failure(
    stack: Stack, shared_worker: Process
) -> None:
    """A child's sessionStatus tool sets its status in the parent's registry (and the parent's
    stream hears it) without ending; its sessionFail tool ends it as a failure the parent gets."""
    thread_id = new_thread(stack, "sub-session-parent")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "start")
        status = stream.until(
            lambda f: f["type"] == "event" and f["eventType"] == "subagent_status",
            "subagent_status",
        )
        child_id = status["data"]["subagentId"]
        assert status["data"]["status"] == "Reading the files"
        # The child goes on (its next reply is slow) while the registry shows its status.
        wait_until(
            lambda: (
                registry(stack, thread_id).json()["subagents"][0]["status"] == "Reading the files"
            ),
            "the registry to show the child's status",
        )
        end = stream.until(
            lambda f: f["type"] == "event" and f["eventType"] == "subagent_end", "subagent_end"
        )
    assert end["data"]["success"] is False
    assert end["data"]["error"] == "The files are unreadable."
    wait_until(lambda: settled(stack, thread_id, "the child gave up"), "the parent's second run")
    delivered = [m for m in rows(stack, thread_id) if m["silent"]]
    assert [m["content"] for m in delivered] == [
        f"Subagent (reference: {child_id}) has reported a failure:\n\nThe files are unreadable."
    ]
    assert registry(stack, thread_id).json()["subagents"][0]["status"] == "failed"
    child_tools = [m for m in rows(stack, child_id) if m["role"] == "tool"]
    assert [m["content"] for m in child_tools] == [
        "Reading the files",
        "The files are unreadable.",
    ]
