"""Forking at a step that called tools (issue #52, item 9): the fork holds each call's result
as the source has it, so neither the chat nor the model is left with a call that never ends.

Sessions run in-process on the scripted ``test`` provider with the demo ``lookup_order`` code
tool; the fork is made and read over HTTP, and what the model received on the fork's next
turn is read back from the fork's stored request log.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from agents_app.models import Log, Message, Thread, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.step.history import MISSING_RESULT
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import scripted_model

pytestmark = pytest.mark.django_db(transaction=True)

# One step calling the tool twice, then the answer. A fork has no request logs, so its first
# request is answered by the script from its start again (the same two calls, then the answer).
CALLS = [
    {"id": "call_a", "name": "lookup_order", "arguments": {"order_id": "A-1001"}},
    {"id": "call_b", "name": "lookup_order", "arguments": {"order_id": "A-1002"}},
]
SCRIPT = [
    {"content": "Let me look those up.", "toolCalls": CALLS},
    {"content": "A-1001 has shipped; A-1002 is being prepared."},
]


def _define(tool: str | dict[str, Any]) -> None:
    model = scripted_model("orders-model", SCRIPT)
    prompt = PromptDefinition(
        name="orders-prompt",
        model=model.name,
        prompt="You look orders up.",
        include_chat=True,
        include_past_tools=True,  # the model is sent the earlier turns' calls and results
        tools=[tool],
    )
    agent = AgentDefinition(name="orders", side_a=SideConfig(prompt=prompt.name))
    save_definitions([("model", model), ("prompt", prompt), ("agent", agent)])


@pytest.fixture
def agent(db: Any) -> str:
    _define("lookup_order")
    return "orders"


def _run(thread: Thread) -> None:
    session = ThreadSession.objects.get(thread=thread, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def _say(client: Any, thread: Thread | str, text: str) -> None:
    thread = thread if isinstance(thread, Thread) else Thread.objects.get(pk=thread)
    response = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": text})
    assert response.status_code == 202, response.content
    _run(thread)


def _rows(client: Any, thread_id: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/threads/{thread_id}/messages?limit=100&order=asc")
    assert response.status_code == 200, response.content
    return response.json()["messages"]


def _step(thread: Thread) -> Message:
    return Message.objects.get(thread=thread, role="assistant", content="Let me look those up.")


def _fork(client: Any, thread: Thread, message: Message) -> Any:
    return client.post_json(f"/api/threads/{thread.pk}/fork", {"message_id": str(message.pk)})


def _first_request(thread_id: str) -> dict[str, Any]:
    log = Log.objects.filter(thread_id=thread_id, kind="llm").order_by("created_at").first()
    assert log is not None
    return log.request_body


def _results(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    fields = ("role", "tool_call_id", "content", "tool_status", "status")
    return [tuple(m[f] for f in fields) for m in rows if m["role"] == "tool"]


def test_a_fork_copies_a_completed_tool_step_with_its_result(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    client, thread = as_(alice), thread_of(alice)
    _say(client, thread, "Where are A-1001 and A-1002?")
    source = _results(_rows(client, thread.pk))
    assert [(r[1], r[3], r[4]) for r in source] == [
        ("call_a", "success", "completed"),
        ("call_b", "success", "completed"),
    ]

    forked = _fork(client, thread, _step(thread))
    assert forked.status_code == 200, forked.content
    rows = _rows(client, forked.json()["threadId"])
    assert [(m["role"], m["content"]) for m in rows[:2]] == [
        ("user", "Where are A-1001 and A-1002?"),
        ("assistant", "Let me look those up."),
    ]
    # Each call's result, in order, as the source has it; the answer after them is not copied.
    assert _results(rows[2:]) == source and len(rows) == 4
    assert "PP-55821" in rows[2]["content"]
    assert all(m["status"] == "completed" for m in rows)

    # Forking at the first result brings the step's other result too.
    first = Message.objects.get(thread=thread, tool_call_id="call_a")
    again = _fork(client, thread, first)
    assert again.status_code == 200, again.content
    assert _results(_rows(client, again.json()["threadId"])) == source


def test_a_fork_sends_the_model_the_copied_tool_results(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    client, thread = as_(alice), thread_of(alice)
    _say(client, thread, "Where are A-1001 and A-1002?")
    forked = _fork(client, thread, _step(thread))
    assert forked.status_code == 200, forked.content
    fork_id = forked.json()["threadId"]

    _say(client, fork_id, "And now?")
    sent = _first_request(fork_id)["messages"]
    source = {r[1]: r[2] for r in _results(_rows(client, thread.pk))}
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:4]] == list(source.items())
    assert "PP-55821" in sent[2]["content"]  # A-1001's tracking number, from the source's run
    assert MISSING_RESULT not in json.dumps(sent)


def test_a_fork_never_leaves_a_dangling_tool_call(as_: Any, alice: Any, thread_of: Any) -> None:
    # The calls wait for approval: the session parks with the step's results not yet stored.
    _define({"name": "lookup_order", "requiresApproval": True})
    client, thread = as_(alice), thread_of(alice)
    _say(client, thread, "Where are A-1001 and A-1002?")
    assert ThreadSession.objects.get(thread=thread).status == "parked"
    step = _step(thread)

    refused = _fork(client, thread, step)
    assert refused.status_code == 409, refused.content
    assert "fork from it once they have" in refused.json()["error"]
    assert Thread.objects.count() == 1

    for call in ("call_a", "call_b"):
        approve = {"tool_call_id": call, "approve": True}
        assert client.post_json(f"/api/threads/{thread.pk}/tool-result", approve).status_code == 200
    _run(thread)

    # Once both results are stored, the step forks whole.
    forked = _fork(client, thread, step)
    assert forked.status_code == 200, forked.content
    rows = _rows(client, forked.json()["threadId"])
    assert [(m["role"], m["tool_call_id"]) for m in rows] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_a"),
        ("tool", "call_b"),
    ]
    assert _results(rows) == _results(_rows(client, thread.pk))
