"""Messages over HTTP: the page rules, posting (queued, provisional frame, one session), edit, delete."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agents_app.models import Message, QueuedMessage, Thread, ThreadFile, ThreadSession
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _fill(thread: Thread, n: int, **kw: Any) -> list[Message]:
    return [
        Message.objects.create(
            thread=thread, role="user", content=f"m{i}", created_at=1_000_000 + i, **kw
        )
        for i in range(n)
    ]


def _contents(response: Any) -> list[str]:
    return [m["content"] for m in response.json()["messages"]]


def test_the_newest_page_comes_oldest_first(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    _fill(thread, 5)
    client = as_(alice)
    first = client.get(f"/api/threads/{thread.pk}/messages?limit=2")
    assert _contents(first) == ["m3", "m4"]
    assert first.json()["total"] == 5 and first.json()["hasMore"] is True
    older = client.get(f"/api/threads/{thread.pk}/messages?limit=2&offset=2")
    assert _contents(older) == ["m1", "m2"]
    last = client.get(f"/api/threads/{thread.pk}/messages?limit=2&offset=4")
    assert _contents(last) == ["m0"] and last.json()["hasMore"] is False
    oldest = client.get(f"/api/threads/{thread.pk}/messages?limit=2&order=asc")
    assert _contents(oldest) == ["m0", "m1"]


def test_message_rows_have_the_reference_fields(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    Message.objects.create(
        thread=thread,
        role="assistant",
        content=None,
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
        created_at=1_700_000_000_000_000,
    )
    [row] = as_(alice).get(f"/api/threads/{thread.pk}/messages").json()["messages"]
    assert row["created_at"] == 1_700_000_000_000_000  # microseconds
    assert isinstance(row["tool_calls"], str) and '"c1"' in row["tool_calls"]
    assert row["attachments"] == [] and row["metadata"] == {}
    for key in ("id", "role", "status", "silent", "depth", "parent_id", "tool_call_id", "log_id"):
        assert key in row


def test_silent_and_deeper_rows_are_opt_in(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    _fill(thread, 1)
    Message.objects.create(thread=thread, role="user", content="quiet", silent=True, created_at=5)
    Message.objects.create(thread=thread, role="assistant", content="deep", depth=1, created_at=6)
    url = f"/api/threads/{thread.pk}/messages"
    client = as_(alice)
    assert _contents(client.get(url)) == ["m0"]
    assert _contents(client.get(url + "?includeSilent=true")) == ["quiet", "m0"]
    assert _contents(client.get(url + "?depth=1")) == ["deep", "m0"]


def test_ids_fetches_exact_rows(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    rows = _fill(thread, 4)
    ids = f"{rows[3].pk},{rows[1].pk},not-a-uuid"
    response = as_(alice).get(f"/api/threads/{thread.pk}/messages?ids={ids}")
    assert _contents(response) == ["m1", "m3"]


def test_posting_queues_and_requests_one_session(
    as_: Any, alice: Any, thread_of: Any, django_capture_on_commit_callbacks: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "hello"})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["messageId"] == body["queueId"]
    assert body["message"].startswith("Message queued for processing.")
    assert len(callbacks) == 2  # dispatch; the provisional frame with the registry activity
    queued = QueuedMessage.objects.get()
    assert str(queued.pk) == body["messageId"] and queued.content == "hello"
    session = ThreadSession.objects.get()
    assert session.status == "queued" and str(session.root_message_id) == body["messageId"]
    # A second message while the first is pending: queued behind it, no second session.
    client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "and then"})
    assert ThreadSession.objects.count() == 1
    page = client.get(f"/api/threads/{thread.pk}/messages").json()["messages"]
    assert [(m["content"], m["status"]) for m in page] == [
        ("hello", "pending"),
        ("and then", "pending"),
    ]
    assert page[0]["metadata"]["queued"] is True
    thread.refresh_from_db()
    assert thread.last_message_preview == "and then"


def test_a_post_sends_its_frame_and_its_registry_activity_in_one_crossing(
    as_: Any,
    alice: Any,
    thread_of: Any,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from agents_app.broadcast import events

    thread = thread_of(alice)
    layer = get_channel_layer()
    watcher, owner = async_to_sync(layer.new_channel)(), async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(events.thread_group(str(thread.pk)), watcher)
    async_to_sync(layer.group_add)(events.registry_user_group(alice.pk), owner)
    crossings: list[str] = []

    def counting(function: Any) -> Any:
        crossings.append(function.__name__)
        return async_to_sync(function)

    monkeypatch.setattr(events, "async_to_sync", counting)
    with django_capture_on_commit_callbacks(execute=True):
        response = as_(alice).post_json(f"/api/threads/{thread.pk}/messages", {"content": "hi"})
    assert response.status_code == 202
    assert crossings == ["_asend_thread_and_registry"]
    frame = async_to_sync(layer.receive)(watcher)
    assert frame["meta"]["type"] == "message_data" and '"content":"hi"' in frame["text"]
    activity = async_to_sync(layer.receive)(owner)["frame"]
    assert activity["type"] == "thread_activity" and activity["threadId"] == str(thread.pk)
    assert activity["last_message_preview"] == "hi" and activity["executing"] is True


def test_queued_rows_count_as_the_newest(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    _fill(thread, 3)
    as_(alice).post_json(f"/api/threads/{thread.pk}/messages", {"content": "queued"})
    client = as_(alice)
    assert _contents(client.get(f"/api/threads/{thread.pk}/messages?limit=2")) == [
        "m2",
        "queued",
    ]
    page = client.get(f"/api/threads/{thread.pk}/messages?limit=2&offset=1").json()
    assert [m["content"] for m in page["messages"]] == ["m1", "m2"]
    assert page["total"] == 4


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"content": "   "}, "Message content or attachments required"),
        ({}, "Message content or attachments required"),
        ({"content": "x", "role": "tool"}, None),
        ({"content": 5}, "Invalid request: content: Input should be a valid string"),
        (
            {"content": "a\u0000b"},
            "Invalid request: content: Text may not contain NUL (\\u0000) characters",
        ),
        ({"content": "x", "attachments": [{"name": "a.png", "data": "!!!"}]}, None),
    ],
)
def test_bad_messages_are_400(
    as_: Any, alice: Any, thread_of: Any, body: Any, error: str | None
) -> None:
    thread = thread_of(alice)
    response = as_(alice).post_json(f"/api/threads/{thread.pk}/messages", body)
    assert response.status_code == 400, response.content
    if error:
        assert response.json() == {"error": error}
    assert not QueuedMessage.objects.exists()


def test_terminated_threads_refuse_messages_with_423(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    Thread.objects.filter(pk=thread.pk).update(terminated_at="2024-01-01T00:00:00Z")
    response = as_(alice).post_json(f"/api/threads/{thread.pk}/messages", {"content": "x"})
    assert response.status_code == 423
    assert response.json()["error"].startswith("Thread is terminated")


def test_attachments_are_stored_in_the_thread_fs(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    data = base64.b64encode(b"\x89PNG fake").decode()
    as_(alice).post_json(
        f"/api/threads/{thread.pk}/messages",
        {
            "content": "",
            "attachments": [{"name": "shot.png", "mimeType": "image/png", "data": data}],
        },
    )
    [ref] = QueuedMessage.objects.get().attachments
    assert ref["path"].startswith("/attachments/") and ref["path"].endswith(".png")
    assert ref["name"] == "shot.png" and ref["size"] == 9
    assert ThreadFile.objects.filter(thread=thread, path=ref["path"]).exists()


def test_edit_and_delete_messages(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    [row] = _fill(thread, 1)
    row.tool_calls = [{"id": "c9", "type": "function", "function": {"name": "t", "arguments": ""}}]
    row.save()
    Message.objects.create(thread=thread, role="tool", tool_call_id="c9", content="r", created_at=9)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/messages/{row.pk}"
    assert client.patch_json(url, {"content": "edited"}).json() == {"success": True}
    assert Message.objects.get(pk=row.pk).content == "edited"
    assert client.patch_json(url, {"content": 3}).status_code == 400
    assert client.delete(url).json() == {"success": True}
    assert not Message.objects.exists()  # its tool result went with it
    missing = client.delete(url)
    assert missing.status_code == 404 and missing.json() == {"error": "Message not found"}


def test_deleting_a_queued_message_cancels_it(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    message_id = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "x"}).json()[
        "messageId"
    ]
    assert client.delete(f"/api/threads/{thread.pk}/messages/{message_id}").status_code == 200
    assert not QueuedMessage.objects.exists()


def test_an_unreadable_attachment_thumbnail_is_refused_not_ignored(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    data = base64.b64encode(b"\x89PNG fake").decode()
    attachment = {"name": "a.png", "mimeType": "image/png", "data": data, "thumbnail": data}
    response = as_(alice).post_json(
        f"/api/threads/{thread.pk}/messages", {"content": "", "attachments": [attachment]}
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith("Invalid request: attachments.0.thumbnail: ")
    assert not QueuedMessage.objects.exists() and not ThreadFile.objects.exists()
