"""A running session keeps the definition versions it started with; the next one takes the
newest (docs/definitions.md, "Versions"). Real Daphne, Celery worker, PostgreSQL and Redis.

The agent's prompt offers a sub-prompt whose model is only loaded when the sub-prompt runs.
The main model streams its first reply slowly (the test provider's streaming simulation), so
the sub-prompt's model is edited over the API while the session is still streaming; the
session must still get the old model's answer, and its log rows name version 1.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.stack import Stack, wait_until

pytestmark = pytest.mark.integration

SLOW = {"chunkSize": 2, "chunkDelayMs": 40}


def _define(stack: Stack) -> None:
    ops = stack.client("ops")
    bodies = [
        (
            "models",
            {
                "name": "pin-helper-model",
                "provider": "test",
                "model": "scripted",
                "script": [{"content": "HELPER-V1"}],
            },
        ),
        (
            "prompts",
            {
                "name": "pin-helper",
                "model": "pin-helper-model",
                "prompt": "You help.",
                "toolDescription": "Asks the helper.",
            },
        ),
        (
            "models",
            {
                "name": "pin-main-model",
                "provider": "test",
                "model": "scripted",
                "streaming": SLOW,
                "script": [
                    {
                        "content": "Let me ask the helper about this, it knows. " * 3,
                        "toolCalls": [{"name": "pin-helper", "arguments": {"message": "Q"}}],
                    },
                    {"content": "Main done."},
                ],
            },
        ),
        (
            "prompts",
            {
                "name": "pin-main",
                "model": "pin-main-model",
                "prompt": "You delegate.",
                "includeChat": True,
                "includePastTools": True,
                "tools": ["pin-helper"],
            },
        ),
        # New agents start as drafts (issue #55): this one is offered to alice.
        ("agents", {"name": "pin-agent", "state": "published", "sideA": {"prompt": "pin-main"}}),
    ]
    for kind, body in bodies:
        response = ops.post(f"/api/{kind}", json={"definition": body})
        assert response.status_code == 201, response.text


def _thread(stack: Stack) -> str:
    response = stack.client("alice").post("/api/threads", json={"agent_id": "pin-agent"})
    assert response.status_code == 200, response.text
    return str(response.json()["threadId"])


def _post(stack: Stack, thread_id: str) -> None:
    response = stack.client("alice").post(
        f"/api/threads/{thread_id}/messages", json={"content": "Go"}
    )
    assert response.status_code == 202, response.text


def _pins(stack: Stack, thread_id: str) -> Any:
    rows = stack.sql(
        "SELECT definition_versions FROM agents_app_threadsession WHERE thread_id = %s",
        thread_id,
    )
    return rows[0][0] if rows and rows[0][0] else None


def _finished(stack: Stack, thread_id: str) -> bool:
    rows = stack.sql("SELECT status FROM agents_app_threadsession WHERE thread_id = %s", thread_id)
    return bool(rows) and rows[0][0] in ("completed", "failed", "stopped")


def _helper_answer(stack: Stack, thread_id: str) -> list[str]:
    rows = stack.sql(
        "SELECT content FROM agents_app_message WHERE thread_id = %s AND role = 'assistant' "
        "AND prompt_name = 'pin-helper' ORDER BY created_at",
        thread_id,
    )
    return [r[0] for r in rows]


def _helper_logs(stack: Stack, thread_id: str) -> list[dict[str, Any]]:
    page = stack.client("alice").get(f"/api/threads/{thread_id}/logs?limit=100").json()
    return [log for log in page["logs"] if log["model"] == "pin-helper-model"]


def test_a_session_started_before_an_edit_finishes_on_the_old_version(
    stack: Stack, worker: Any
) -> None:
    worker("pins")
    _define(stack)
    before = _thread(stack)
    _post(stack, before)
    pins = wait_until(lambda: _pins(stack, before), "the session to start (its pins)")
    assert pins["models"]["pin-helper-model"] == 1
    assert pins["prompts"] == {"pin-main": 1, "pin-helper": 1}

    # Edited while the main model is still streaming its first reply.
    edit = stack.client("ops").put(
        "/api/models/pin-helper-model",
        json={"script": [{"content": "HELPER-V2"}], "versionNote": "Second answer"},
    )
    assert edit.status_code == 200, edit.text
    assert not _helper_logs(stack, before), "the helper ran before the edit: stream slower"
    assert not _finished(stack, before)

    wait_until(lambda: _finished(stack, before), "the first session to end", timeout=60)
    assert _helper_answer(stack, before) == ["HELPER-V1"]
    logs = _helper_logs(stack, before)
    assert logs and logs[0]["definition_versions"] == {
        "agents/pin-agent": 1,
        "models/pin-helper-model": 1,
        "prompts/pin-helper": 1,
    }

    # A session started after the edit runs on the newest version.
    after = _thread(stack)
    _post(stack, after)
    wait_until(lambda: _finished(stack, after), "the second session to end", timeout=60)
    assert _pins(stack, after)["models"]["pin-helper-model"] == 2
    assert _helper_answer(stack, after) == ["HELPER-V2"]
    assert _helper_logs(stack, after)[0]["definition_versions"]["models/pin-helper-model"] == 2
    main = [
        log
        for log in stack.client("alice").get(f"/api/threads/{after}/logs").json()["logs"]
        if log["model"] == "pin-main-model"
    ]
    assert main[0]["definition_versions"] == {
        "agents/pin-agent": 1,
        "prompts/pin-main": 1,
        "models/pin-main-model": 1,
    }
