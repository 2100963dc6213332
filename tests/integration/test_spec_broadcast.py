"""Spec rules with a wire effect, through the service (issue #15): a real worker runs the
sessions, a real WebSocket client renders the frames in order.

- every step's row is broadcast ``pending`` before it completes, fast replies included;
- a queued message (here a child's result delivered to its parent) is broadcast at once as
  ``pending`` with ``metadata.queued``, then stored under the same id;
- ``state.queue_tool`` on an idle thread (from a thread endpoint) starts a session with that
  call.

The stack is this module's own: its code folder adds the thread endpoint that queues a tool.
No timing assertions: every wait is a bounded poll that fails with a sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.stack import ROOT, Process, Stack
from tests.integration.test_live_sessions import Watch, messages, new_thread, post
from tests.runtime.test_spec_engine_rules import never_completed_unseen

pytestmark = pytest.mark.integration

ENDPOINT = """
from runtime.tools.registry import define_thread_endpoint


@define_thread_endpoint
async def queue_lookup(request, state, params):
    return {"callId": state.queue_tool("lookup_order", {"order_id": "A-1001"})}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("spec-stack")
    project = tmp / "project"
    (project / "agents" / "api").mkdir(parents=True)
    (project / "agents" / "api" / "queue_lookup.post.py").write_text(ENDPOINT)
    extra = {"STUDIO_AGENTS_DIRS": f"{ROOT / 'agents'},{project}"}
    running = Stack(tmp, extra_env=extra).start()
    try:
        yield running
    finally:
        running.stop()


def _answered(frame: dict[str, Any]) -> bool:
    data = frame.get("data") if frame["type"] == "message_data" else None
    return (
        bool(data) and data["content"] == "the child answered" and (data["status"] == "completed")
    )


def test_spec_a_client_never_sees_a_completed_step_row_it_never_saw_pending(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "sub-async-parent")
    path = f"/api/threads/{thread_id}/stream?includeSilent=true"
    with Watch(stack, path) as stream:
        post(stack, thread_id, "start")
        stream.until(_answered, "the parent's answer to its child's result", timeout=60)
    frames = [f for f in stream.frames if f["type"] == "message_data"]
    steps = {f["message_id"] for f in frames if f["data"].get("request_sent_at")}
    assert len(steps) == 3  # the fast tool call, "waiting for the child", the answer
    assert never_completed_unseen(stream.frames) == []
    # The child's result was queued to the parent: shown at once, pending and queued.
    delivery = [f for f in frames if f["data"]["metadata"].get("subagent_status") == "idle"]
    assert delivery, [f["data"]["content"] for f in frames]
    first, last = delivery[0]["data"], delivery[-1]["data"]
    assert first["status"] == "pending" and first["metadata"]["queued"] is True
    assert last["status"] == "completed" and last["id"] == first["id"]


def test_spec_queue_tool_on_an_idle_thread_starts_a_session_with_that_call(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "queue-tool-agent")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        queued = stack.client("alice").post(f"/api/threads/{thread_id}/queue_lookup")
        assert queued.status_code == 200, queued.text
        call_id = queued.json()["callId"]
        stream.until(
            lambda f: f["type"] == "stopped", "the session the queued call started", timeout=60
        )
    rows = stack.client("alice").get(f"/api/threads/{thread_id}/messages").json()["messages"]
    assert [(m["role"], m["status"]) for m in rows] == [
        ("assistant", "completed"),
        ("tool", "completed"),
        ("assistant", "completed"),
    ]
    opening, result, answer = rows
    assert call_id in opening["tool_calls"] and result["tool_call_id"] == call_id
    assert '"A-1001"' in result["content"] and '"shipped"' in result["content"]
    assert answer["content"] == "Your order has shipped."
    assert messages(stack, thread_id)[-1] == ("assistant", "completed", "Your order has shipped.")
    first = next(f for f in stream.frames if f["type"] == "message_data")
    assert first["message_id"] == opening["id"] and first["data"]["status"] == "pending"
    assert first["data"]["metadata"]["queued"] is True
