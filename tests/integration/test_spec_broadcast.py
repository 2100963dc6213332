"""Broadcast rules through the service (issue #15): a real worker runs the sessions, a real
WebSocket client renders the frames in order.

- every step's row is broadcast ``pending`` before it completes, fast replies included;
- a queued message (here a child's result delivered to its parent) is broadcast at once as
  ``pending`` with ``metadata.queued``, then stored under the same id.

No timing assertions: every wait is a bounded poll that fails with a sentence.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.stack import Stack
from tests.integration.test_live_sessions import Watch, new_thread, post
from tests.runtime.test_spec_engine_rules import never_completed_unseen

pytestmark = pytest.mark.integration


def _answered(frame: dict[str, Any]) -> bool:
    data = frame.get("data") if frame["type"] == "message_data" else None
    return bool(data) and data["content"] == "the child answered" and (
        data["status"] == "completed"
    )


def test_spec_a_client_never_sees_a_completed_step_row_it_never_saw_pending(
    stack: Stack, worker: Any
) -> None:
    worker("w1")
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
