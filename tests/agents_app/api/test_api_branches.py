"""Conversations as trees (issue #41) over HTTP and the stream socket: edit, regenerate,
switch versions, fork; what the model's next request holds; 409 while a session runs;
idempotent edits; cross-user refusals; the kept counts of abandoned branches.

Sessions run in-process (``run_session_job``, the executor is off) on the scripted ``test``
provider; the request the model received is read back from its stored log.
"""

from __future__ import annotations

import base64
import io
import json
import uuid
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from PIL import Image

from agents_app.models import Log, Message, Thread, ThreadMessageCount, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.services.access.api_keys import api_key_create
from studio.asgi import application
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db(transaction=True)

REPLIES = [f"reply {n}" for n in range(1, 9)]


@pytest.fixture
def agent(db: Any) -> str:
    define_agent("helper", [{"content": text} for text in REPLIES])
    return "helper"


@pytest.fixture
def chat(as_: Any, alice: Any, thread_of: Any) -> tuple[Any, Thread]:
    """Alice's client and a thread of hers."""
    return as_(alice), thread_of(alice)


def _run(thread: Thread) -> None:
    session = ThreadSession.objects.get(thread=thread, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def _say(client: Any, thread: Thread, text: str) -> None:
    response = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": text})
    assert response.status_code == 202, response.content
    _run(thread)


def _page(client: Any, thread: Thread) -> dict[str, Any]:
    response = client.get(f"/api/threads/{thread.pk}/messages")
    assert response.status_code == 200, response.content
    return response.json()


def _contents(client: Any, thread: Thread) -> list[str]:
    return [m["content"] for m in _page(client, thread)["messages"]]


def _row(thread: Thread, content: str) -> Message:
    return Message.objects.get(thread=thread, content=content)


def _last_request(thread: Thread) -> str:
    """The newest model request of the thread, as stored in its log (JSON text)."""
    log = Log.objects.filter(thread=thread, kind="llm").order_by("-created_at").first()
    assert log is not None
    return json.dumps(log.request_body)


def _counts(thread: Thread) -> tuple[int, int]:
    row = ThreadMessageCount.objects.get(thread=thread)
    return row.top_level, row.abandoned


def _conversation(client: Any, thread: Thread) -> None:
    _say(client, thread, "first question")
    _say(client, thread, "second question")


def _edited_conversation(client: Any, thread: Thread) -> Message:
    """``_conversation``, then its second question edited to "changed question" and answered
    (reply 3); returns the original second question, now on the abandoned branch."""
    _conversation(client, thread)
    old = _row(thread, "second question")
    client.post_json(
        f"/api/threads/{thread.pk}/messages/{old.pk}/edit", {"content": "changed question"}
    )
    _run(thread)
    return old


def test_a_linear_thread_has_parents_and_single_versions(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    _conversation(client, thread)
    rows = _page(client, thread)["messages"]
    assert [m["content"] for m in rows] == [
        "first question",
        "reply 1",
        "second question",
        "reply 2",
    ]
    # parent_id keeps the reference's meaning (null on top-level rows: a linear client sees
    # what it saw before); the tree's link is branch.follows.
    assert [m["parent_id"] for m in rows] == [None] * 4
    follows = [None, rows[0]["id"], rows[1]["id"], rows[2]["id"]]
    assert [m["branch"] for m in rows] == [
        {"index": 0, "count": 1, "sibling_ids": [m["id"]], "follows": f}
        for m, f in zip(rows, follows, strict=True)
    ]


def test_edit_makes_a_sibling_and_the_model_sees_only_the_active_path(
    chat: tuple[Any, Thread],
) -> None:
    client, thread = chat
    _conversation(client, thread)
    old = _row(thread, "second question")
    response = client.post_json(
        f"/api/threads/{thread.pk}/messages/{old.pk}/edit", {"content": "changed question"}
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and body["messageId"] == body["queueId"]
    _run(thread)

    request = _last_request(thread)
    assert "changed question" in request and "first question" in request
    assert "second question" not in request and "reply 2" not in request

    page = _page(client, thread)
    assert [m["content"] for m in page["messages"]] == [
        "first question",
        "reply 1",
        "changed question",
        "reply 3",
    ]
    assert page["total"] == 4
    edited = page["messages"][2]
    assert edited["id"] == body["messageId"]
    assert edited["parent_id"] is None
    assert edited["branch"] == {
        "index": 1,
        "count": 2,
        "sibling_ids": [str(old.pk), edited["id"]],
        "follows": str(_row(thread, "reply 1").pk),
    }
    assert _counts(thread) == (4, 2)  # the abandoned branch is kept, counted apart


def test_regenerate_writes_a_sibling_reply_from_the_same_history(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    _conversation(client, thread)
    first = _row(thread, "reply 2")
    response = client.post(f"/api/threads/{thread.pk}/messages/{first.pk}/regenerate")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    _run(thread)

    request = _last_request(thread)
    assert "second question" in request and "reply 2" not in request
    rows = _page(client, thread)["messages"]
    assert [m["content"] for m in rows] == [
        "first question",
        "reply 1",
        "second question",
        "reply 3",
    ]
    again = rows[-1]
    assert again["branch"]["follows"] == str(_row(thread, "second question").pk)
    assert again["branch"]["sibling_ids"] == [str(first.pk), again["id"]]
    assert again["branch"]["index"] == 1


def test_switching_versions_changes_what_the_model_reads_next(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    old = _edited_conversation(client, thread)

    response = client.put(
        f"/api/threads/{thread.pk}/active",
        {"message_id": str(old.pk)},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    ids = [
        str(_row(thread, c).pk) for c in ("first question", "reply 1", "second question", "reply 2")
    ]
    assert response.json()["active_path"] == ids  # down to the newest message below it
    assert _contents(client, thread) == ["first question", "reply 1", "second question", "reply 2"]

    _say(client, thread, "third question")
    request = _last_request(thread)
    assert "reply 2" in request and "third question" in request
    assert "changed question" not in request and "reply 3" not in request
    assert _counts(thread) == (6, 2)


def test_switching_announces_the_active_path_on_the_thread_socket(
    chat: tuple[Any, Thread], alice: Any
) -> None:
    client, thread = chat
    old = _edited_conversation(client, thread)
    _, key = api_key_create(user=alice, name="socket")

    async def switch_and_listen() -> dict[str, Any]:
        socket = WebsocketCommunicator(
            application,
            f"/api/threads/{thread.pk}/stream",
            headers=[(b"authorization", f"Bearer {key}".encode())],
        )
        connected, _ = await socket.connect()
        assert connected
        put = sync_to_async(client.put)
        answer = await put(
            f"/api/threads/{thread.pk}/active",
            {"message_id": str(old.pk)},
            content_type="application/json",
        )
        assert answer.status_code == 200
        try:
            while True:
                frame = await socket.receive_json_from(timeout=10)
                if frame.get("type") == "event" and frame["eventType"] == "active_path_changed":
                    return frame
        finally:
            await socket.disconnect()

    frame = async_to_sync(switch_and_listen)()
    assert frame["data"]["leafId"] == str(_row(thread, "reply 2").pk)
    assert frame["data"]["path"][-2] == str(old.pk)


def test_branch_changes_are_refused_while_a_session_runs(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    _conversation(client, thread)
    question, reply = _row(thread, "second question"), _row(thread, "reply 2")
    client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "still running"})
    base = f"/api/threads/{thread.pk}"
    answers = [
        client.post_json(f"{base}/messages/{question.pk}/edit", {"content": "x"}),
        client.post(f"{base}/messages/{reply.pk}/regenerate"),
        client.put(f"{base}/active", {"message_id": str(question.pk)}, "application/json"),
    ]
    for answer in answers:
        assert answer.status_code == 409, answer.content
        assert "session is running" in answer.json()["error"]
    assert not Message.objects.filter(thread=thread, abandoned=True).exists()


def test_an_edit_retried_with_its_idempotency_key_is_stored_once(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    _conversation(client, thread)
    old = _row(thread, "second question")
    url = f"/api/threads/{thread.pk}/messages/{old.pk}/edit"
    first = client.post_json(url, {"content": "changed"}, HTTP_IDEMPOTENCY_KEY="edit-1")
    again = client.post_json(url, {"content": "changed"}, HTTP_IDEMPOTENCY_KEY="edit-1")
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    other = client.post_json(url, {"content": "else"}, HTTP_IDEMPOTENCY_KEY="edit-1")
    assert other.status_code == 422
    _run(thread)
    assert Message.objects.filter(thread=thread, content="changed").count() == 1
    assert ThreadSession.objects.filter(thread=thread).count() == 3


def test_edit_and_regenerate_refuse_the_wrong_kind_of_message(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    _say(client, thread, "first question")
    question, reply = _row(thread, "first question"), _row(thread, "reply 1")
    base = f"/api/threads/{thread.pk}/messages"
    edit_reply = client.post_json(f"{base}/{reply.pk}/edit", {"content": "x"})
    regenerate_question = client.post(f"{base}/{question.pk}/regenerate")
    unknown = client.post_json(f"{base}/{uuid.uuid4()}/edit", {"content": "x"})
    assert (edit_reply.status_code, regenerate_question.status_code) == (400, 400)
    assert unknown.status_code == 404 and unknown.json() == {"error": "Message not found"}


def _png() -> str:
    out = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_fork_copies_the_path_and_its_files_into_a_new_thread(
    chat: tuple[Any, Thread], alice: Any
) -> None:
    client, thread = chat
    attachment = {"name": "dot.png", "mimeType": "image/png", "data": _png()}
    response = client.post_json(
        f"/api/threads/{thread.pk}/messages",
        {"content": "first question", "attachments": [attachment]},
    )
    assert response.status_code == 202
    _run(thread)
    _say(client, thread, "second question")
    reply = _row(thread, "reply 1")

    forked = client.post_json(f"/api/threads/{thread.pk}/fork", {"message_id": str(reply.pk)})
    assert forked.status_code == 200, forked.content
    fork_id = forked.json()["threadId"]
    fork = Thread.objects.get(pk=fork_id)
    assert fork.owner_id == alice.pk and fork.agent_id == thread.agent_id

    rows = client.get(f"/api/threads/{fork_id}/messages").json()["messages"]
    assert [m["content"] for m in rows] == ["first question", "reply 1"]
    assert {m["id"] for m in rows}.isdisjoint(
        {str(reply.pk), str(_row(thread, "first question").pk)}
    )
    assert rows[1]["branch"]["follows"] == rows[0]["id"]
    path = rows[0]["attachments"][0]["path"]
    original = client.get(f"/api/threads/{thread.pk}/fs{path}")
    copied = client.get(f"/api/threads/{fork_id}/fs{path}")
    assert copied.status_code == 200 and copied.content == original.content
    assert _contents(client, thread)[-1] == "reply 2"  # the source is unchanged


def test_other_users_are_refused_as_for_the_thread(
    as_: Any, alice: Any, bob: Any, charlie: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    _say(as_(alice), thread, "first question")
    question, reply = _row(thread, "first question"), _row(thread, "reply 1")
    base = f"/api/threads/{thread.pk}"
    for outsider in (bob, charlie):
        client = as_(outsider)
        answers = [
            client.post_json(f"{base}/messages/{question.pk}/edit", {"content": "x"}),
            client.post(f"{base}/messages/{reply.pk}/regenerate"),
            client.put(f"{base}/active", {"message_id": str(question.pk)}, "application/json"),
            client.post_json(f"{base}/fork", {"message_id": str(reply.pk)}),
            client.get(f"{base}/tree"),
        ]
        assert [a.status_code for a in answers] == [403] * 5
        assert all("Forbidden" in a.json()["error"] for a in answers)
    missing = as_(bob).post_json(f"/api/threads/{uuid.uuid4()}/fork", {"message_id": "x"})
    assert missing.status_code == 404
    assert Thread.objects.count() == 1 and not Message.objects.filter(abandoned=True).exists()


def test_the_tree_lists_every_version_and_the_active_path(chat: tuple[Any, Thread]) -> None:
    client, thread = chat
    _conversation(client, thread)
    reply = _row(thread, "reply 2")
    client.post(f"/api/threads/{thread.pk}/messages/{reply.pk}/regenerate")
    _run(thread)
    tree = client.get(f"/api/threads/{thread.pk}/tree").json()
    assert [n["preview"] for n in tree["nodes"]] == [
        "first question",
        "reply 1",
        "second question",
        "reply 2",
        "reply 3",
    ]
    assert [n["active"] for n in tree["nodes"]] == [True, True, True, False, True]
    assert tree["active_path"] == [n["id"] for n in tree["nodes"] if n["active"]]
    assert tree["nodes"][3]["branch"]["count"] == 2
