"""Issue #54, row I4 (spec 0.2.0): ``GET …/messages?ids=…&includeWorkblocks=true`` expands
each requested tool-involved message to its work block (the contiguous run of assistant rows
with tool calls and tool rows), and ``GET …/logs?includeDescendants=true`` adds descendant
logs (``parent_log_id``) and the logs of the descendant threads the caller may view."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import Log, Message, Thread
from agents_app.orchestration.thread_creation import thread_create
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

CALL = [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]
SECRET = "sk-child-canary-7Qm2"


def _conversation(thread: Thread) -> dict[str, Message]:
    """user, [assistant+call, (sub-prompt row one depth down), tool, assistant+call, tool],
    final answer, user, [assistant+call, tool], final answer."""
    rows: dict[str, Message] = {}

    def add(name: str, role: str, *, calls: Any = None, depth: int = 0) -> None:
        rows[name] = Message.objects.create(
            thread=thread,
            role=role,
            content=name,
            tool_calls=calls,
            depth=depth,
            created_at=1_000_000 + len(rows),
        )

    add("ask", "user")
    add("call1", "assistant", calls=CALL)
    add("sub", "user", depth=1)
    add("result1", "tool")
    add("call2", "assistant", calls=CALL)
    add("result2", "tool")
    add("answer", "assistant")
    add("ask2", "user")
    add("call3", "assistant", calls=CALL)
    add("result3", "tool")
    add("answer2", "assistant")
    return rows


def _contents(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [m["content"] for m in response.json()["messages"]]


def test_I4_include_workblocks_expands_ids_to_their_work_block(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    rows = _conversation(thread)
    url = f"/api/threads/{thread.pk}/messages?ids={rows['result1'].pk},{rows['answer2'].pk}"
    client = as_(alice)

    assert _contents(client.get(url)) == ["result1", "answer2"]  # as before without it
    expanded = client.get(url + "&includeWorkblocks=true")
    # The block around result1 (the sub-prompt's row is one depth down: not in it, not
    # ending it); answer2 is no tool row: itself alone.
    assert _contents(expanded) == ["call1", "result1", "call2", "result2", "answer2"]
    assert expanded.json()["total"] == 5 and expanded.json()["hasMore"] is False
    # A call brings its results; blocks are separate per run.
    only_call3 = client.get(
        f"/api/threads/{thread.pk}/messages?ids={rows['call3'].pk}&includeWorkblocks=true"
    )
    assert _contents(only_call3) == ["call3", "result3"]


def test_I4_include_workblocks_stays_in_the_thread(as_: Any, alice: Any, thread_of: Any) -> None:
    thread, other = thread_of(alice), thread_of(alice)
    rows = _conversation(other)
    response = as_(alice).get(
        f"/api/threads/{thread.pk}/messages?ids={rows['call1'].pk}&includeWorkblocks=true"
    )
    assert _contents(response) == []


def _log(thread: Thread, name: str, at: int, **kw: Any) -> Log:
    log = Log.objects.create(thread=thread, kind="llm", prompt_name=name, **kw)
    Log.objects.filter(pk=log.pk).update(created_at=at)  # a fixed order
    return log


def _names(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [log["prompt_name"] for log in response.json()["logs"]]


def test_I4_include_descendants_adds_child_logs_and_visible_child_threads(
    as_: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    root = thread_of(alice)
    child = thread_create(user=alice, agent_name=root.agent.name, env={"API_KEY": SECRET})
    Thread.objects.filter(pk=child.pk).update(parent=root)
    grandchild = Thread.objects.create(
        agent=root.agent, origin_agent=root.agent, owner=alice, parent=child
    )
    hidden = Thread.objects.create(
        agent=root.agent, origin_agent=root.agent, owner=bob, parent=root
    )
    below_hidden = Thread.objects.create(
        agent=root.agent, origin_agent=root.agent, owner=alice, parent=hidden
    )
    top = _log(root, "top", 1)
    sub = _log(root, "sub", 2, parent=top)
    _log(root, "subsub", 3, parent=sub)
    _log(root, "other", 4)
    _log(child, f"child {SECRET}", 5)
    _log(grandchild, "grandchild", 6)
    _log(hidden, "hidden", 7)
    _log(below_hidden, "below hidden", 8)
    client = as_(alice)
    url = f"/api/threads/{root.pk}/logs"

    assert _names(client.get(url)) == ["top", "sub", "subsub", "other"]
    everything = client.get(url + "?includeDescendants=true")
    names = _names(everything)
    assert names == [
        "top",
        "sub",
        "subsub",
        "other",
        "child [REDACTED:API_KEY]",  # the child's own secrets
        "grandchild",
    ]
    assert SECRET not in everything.content.decode()
    by_name = {log["prompt_name"]: log["thread_id"] for log in everything.json()["logs"]}
    assert by_name["grandchild"] == str(grandchild.pk) and by_name["top"] == str(root.pk)
    assert everything.json()["total"] == 6
    # Narrowed by ids: those logs and their descendants through parent_log_id.
    assert _names(client.get(f"{url}?ids={top.pk}")) == ["top"]
    assert _names(client.get(f"{url}?ids={top.pk}&includeDescendants=true")) == [
        "top",
        "sub",
        "subsub",
    ]


def test_I4_log_message_ids_take_work_blocks_too(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    rows = _conversation(thread)
    _log(thread, "for call1", 1, message_id=rows["call1"].pk)
    _log(thread, "for result2", 2, message_id=rows["result2"].pk)
    _log(thread, "for answer", 3, message_id=rows["answer"].pk)
    url = f"/api/threads/{thread.pk}/logs?messageIds={rows['result1'].pk}"
    client = as_(alice)
    assert _names(client.get(url)) == []
    assert _names(client.get(url + "&includeWorkblocks=true")) == ["for call1", "for result2"]
