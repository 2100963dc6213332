"""Conversations as trees (issue #41) on the production topology: every branch route over
real HTTP against Daphne, sessions on a real Celery worker, frames on a real WebSocket.

What the model was sent is read back from the stored request log (PostgreSQL), so "the
model's next request holds only the active path" is checked where it happened.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.stack import Stack, wait_until
from tests.integration.test_live_sessions import Frame, Watch, new_thread, post

pytestmark = pytest.mark.integration

AGENT = "brancher-live"
REPLIES = [
    {"content": "first answer", "delayMs": 1500},
    {"content": "second answer"},
    {"content": "third answer"},
    {"content": "fourth answer"},
    {"content": "fifth answer"},
]
DEFINE = f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="{AGENT}-model", provider="test", model="scripted",
                        script={REPLIES!r})
prompt = PromptDefinition(name="{AGENT}-prompt", model=model.name, prompt="Be brief.",
                          include_chat=True)
agent = AgentDefinition(name="{AGENT}", side_a=SideConfig(prompt=prompt.name))
save_definitions([(model.name, model), (prompt.name, prompt), (agent.name, agent)],
                 strict_code_names=False)
"""


def _define(stack: Stack) -> None:
    stack.python(DEFINE)


def _page(stack: Stack, thread_id: str, user: str = "alice") -> list[dict[str, Any]]:
    response = stack.client(user).get(f"/api/threads/{thread_id}/messages?limit=100")
    assert response.status_code == 200, response.text
    return list(response.json()["messages"])


def _said(stack: Stack, thread_id: str) -> list[str]:
    return [m["content"] for m in _page(stack, thread_id)]


def _settled(stack: Stack, thread_id: str, count: int) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        rows = _page(stack, thread_id)
        finished = all(m["status"] in (None, "completed") for m in rows)
        idle = not stack.sql(
            "SELECT 1 FROM agents_app_threadsession WHERE thread_id = %s "
            "AND status IN ('queued', 'running')",
            thread_id,
        )
        return rows if len(rows) == count and finished and idle else None

    return wait_until(done, f"{count} settled messages in {thread_id}")  # type: ignore[no-any-return]


def _last_request(stack: Stack, thread_id: str) -> str:
    rows = stack.sql(
        "SELECT request_body FROM agents_app_log WHERE thread_id = %s AND kind = 'llm' "
        "ORDER BY created_at DESC LIMIT 1",
        thread_id,
    )
    return json.dumps(rows[0][0])


def _path_frame(watch: Watch) -> Frame:
    return watch.until(
        lambda f: f.get("type") == "event" and f.get("eventType") == "active_path_changed",
        "the active_path_changed frame",
    )


def _id(rows: list[dict[str, Any]], content: str) -> str:
    return next(m["id"] for m in rows if m["content"] == content)


def test_every_branch_route_over_http_and_websocket(stack: Stack, worker: Any) -> None:
    _define(stack)
    worker("w-branches")
    alice = stack.client("alice")
    thread_id = new_thread(stack, AGENT)
    base = f"/api/threads/{thread_id}"
    with Watch(stack, f"{base}/stream") as watch:
        first = post(stack, thread_id, "one")
        # While the first reply is being written, the path may not move.
        wait_until(
            lambda: any(m["role"] == "assistant" for m in _page(stack, thread_id)),
            "the reply to start",
        )
        busy = [
            alice.post(f"{base}/messages/{first}/edit", json={"content": "x"}),
            alice.put(f"{base}/active", json={"message_id": first}),
        ]
        assert [r.status_code for r in busy] == [409, 409], [r.text for r in busy]
        assert all("A session is running" in r.json()["error"] for r in busy)
        _settled(stack, thread_id, 2)
        post(stack, thread_id, "two")
        rows = _settled(stack, thread_id, 4)
        assert [m["parent_id"] for m in rows] == [None] * 4  # a linear client's view
        two = _id(rows, "two")

        # Edit, retried with the same key: one new version, the same answer twice.
        key = {"Idempotency-Key": "edit-two-1"}
        edit = alice.post(
            f"{base}/messages/{two}/edit", json={"content": "two, edited"}, headers=key
        )
        again = alice.post(
            f"{base}/messages/{two}/edit", json={"content": "two, edited"}, headers=key
        )
        assert edit.status_code == again.status_code == 202, edit.text
        assert again.json() == edit.json() and again.headers["Idempotent-Replayed"] == "true"
        frame = _path_frame(watch)
        assert frame["data"]["path"] == [m["id"] for m in rows[:2]]
        rows = _settled(stack, thread_id, 4)
        assert _said(stack, thread_id) == ["one", "first answer", "two, edited", "third answer"]
        assert rows[2]["branch"]["sibling_ids"] == [two, edit.json()["messageId"]]
        sent = _last_request(stack, thread_id)
        assert "two, edited" in sent and "first answer" in sent
        assert '"two"' not in sent and "second answer" not in sent

        # Regenerate the new reply: a sibling, from the same history.
        third = _id(rows, "third answer")
        regenerated = alice.post(f"{base}/messages/{third}/regenerate")
        assert regenerated.status_code == 202, regenerated.text
        _path_frame(watch)
        rows = _settled(stack, thread_id, 4)
        assert rows[3]["content"] == "fourth answer"
        assert rows[3]["branch"]["count"] == 2 and rows[3]["branch"]["index"] == 1
        sent = _last_request(stack, thread_id)
        assert "two, edited" in sent and "third answer" not in sent

        # Switch back to the first version of "two": its own reply comes with it.
        switched = alice.put(f"{base}/active", json={"message_id": two})
        assert switched.status_code == 200, switched.text
        second = _id(
            [
                {"id": i, "content": c}
                for i, c in stack.sql(
                    "SELECT id::text, content FROM agents_app_message WHERE thread_id = %s",
                    thread_id,
                )
            ],
            "second answer",
        )
        assert switched.json()["leaf_id"] == second
        frame = _path_frame(watch)
        assert frame["data"]["leafId"] == second
        assert _said(stack, thread_id) == ["one", "first answer", "two", "second answer"]
        post(stack, thread_id, "three")
        _settled(stack, thread_id, 6)
        sent = _last_request(stack, thread_id)
        assert '"two"' in sent and "second answer" in sent and "three" in sent
        assert "two, edited" not in sent and "third answer" not in sent

    # Fork from the first reply: a new thread of alice's with copies of that path.
    forked = alice.post(f"{base}/fork", json={"message_id": _id(rows, "first answer")})
    assert forked.status_code == 200, forked.text
    fork_id = forked.json()["threadId"]
    assert _said(stack, fork_id) == ["one", "first answer"]
    assert {m["id"] for m in _page(stack, fork_id)}.isdisjoint({m["id"] for m in rows})
    tree = alice.get(f"{base}/tree").json()
    assert len(tree["nodes"]) == 9 and len(tree["active_path"]) == 6

    # Someone else: refused as for the thread, nothing moved.
    charlie = stack.client("charlie")
    refused = [
        charlie.post(f"{base}/messages/{two}/edit", json={"content": "x"}),
        charlie.post(f"{base}/messages/{second}/regenerate"),
        charlie.put(f"{base}/active", json={"message_id": two}),
        charlie.post(f"{base}/fork", json={"message_id": two}),
        charlie.get(f"{base}/tree"),
    ]
    assert [r.status_code for r in refused] == [403] * 5
    assert all(r.headers["content-type"].startswith("application/json") for r in refused)
    assert _said(stack, thread_id)[-1] == "fifth answer"
