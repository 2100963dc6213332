"""End to end on real processes: Daphne serves HTTP and WebSockets, Celery workers run the
sessions, PostgreSQL stores, Redis carries tasks and frames.

No timing assertions: every wait is a bounded poll that fails with a sentence.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from celery import Celery
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.integration.stack import Process, Stack, wait_until

pytestmark = pytest.mark.integration

Frame = dict[str, Any]


class Watch:
    """A WebSocket client that keeps every frame it received."""

    def __init__(self, stack: Stack, path: str, user: str | None = "alice") -> None:
        headers = {"Authorization": f"Bearer {stack.keys[user]}"} if user else {}
        self.conn: ClientConnection = connect(
            stack.ws + path, additional_headers=headers, legacy=True
        )
        self.frames: list[Frame] = []

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.conn.close()

    def until(self, predicate: Callable[[Frame], bool], what: str, timeout: float = 30) -> Frame:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                seen = [f.get("type") for f in self.frames]
                raise AssertionError(f"no frame for {what} within {timeout}s; saw {seen}")
            try:
                raw = self.conn.recv(timeout=remaining)
            except TimeoutError:
                continue
            frame = json.loads(raw)
            self.frames.append(frame)
            if predicate(frame):
                return frame


def kind(frame: Frame) -> tuple[Any, ...]:
    data = frame.get("data") if frame["type"] == "message_data" else None
    return (frame["type"], data["role"], data["status"]) if data else (frame["type"],)


def messages(stack: Stack, thread_id: str, user: str = "alice") -> list[tuple[Any, ...]]:
    page = stack.client(user).get(f"/api/threads/{thread_id}/messages?limit=100").json()
    return [(m["role"], m["status"], m["content"]) for m in page["messages"]]


def new_thread(stack: Stack, agent: str, user: str = "alice") -> str:
    response = stack.client(user).post("/api/threads", json={"agent_id": agent})
    assert response.status_code == 200, response.text
    return str(response.json()["threadId"])


def post(stack: Stack, thread_id: str, content: str, user: str = "alice") -> str:
    response = stack.client(user).post(
        f"/api/threads/{thread_id}/messages", json={"content": content}
    )
    assert response.status_code == 202, response.text
    return str(response.json()["messageId"])


def handled(workers: list[Any], task_id: str) -> bool:
    """Whether a worker's log says it finished the Celery task ``task_id`` (either way)."""
    logs = [w.log.read_text(errors="replace") for w in workers]
    return any(f"[{task_id}] succeeded" in log or f"[{task_id}] raised" in log for log in logs)


def assistant_pending(stack: Stack, thread_id: str) -> bool:
    return ("assistant", "pending", None) in messages(stack, thread_id)


def test_a_watched_thread_streams_in_the_documented_order(
    stack: Stack, shared_worker: Process
) -> None:
    with Watch(stack, "/api/events") as registry:
        thread_id = new_thread(stack, "greeter")
        created = registry.until(lambda f: f["type"] == "thread_created", "thread_created")
        assert created["thread"]["id"] == thread_id
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        message_id = post(stack, thread_id, "Hi there")
        stream.until(lambda f: f["type"] == "stopped", "the session's stopped frame")
    frames = [f for f in stream.frames if f["type"] != "log_data"]
    kinds = [kind(f) for f in frames]
    # The documented order of one model turn (docs/api.md, "Frames").
    assert kinds[0] == ("message_data", "user", "pending")
    assert frames[0]["message_id"] == message_id
    assert frames[0]["data"]["metadata"]["queued"] is True
    order = [
        kinds.index(("message_data", "user", "completed")),
        kinds.index(("step_started",)),
        kinds.index(("message_data", "assistant", "pending")),
        kinds.index(("llm_request",)),
        kinds.index(("message_chunk",)),
        kinds.index(("llm_response",)),
        kinds.index(("message_data", "assistant", "completed")),
        kinds.index(("stopped",)),
    ]
    assert order == sorted(order), kinds
    assert frames[order[0]]["message_id"] == message_id  # stored under the same id
    reply = "".join(f["chunk"] for f in frames if f["type"] == "message_chunk")
    assert reply == "Hello Alice! How can I help you today?"
    # Every frame of the session's stream is numbered without gaps.
    session = [f for f in stream.frames if f["stream"] == frames[-1]["stream"]]
    assert [f["seq"] for f in session] == list(
        range(session[0]["seq"], session[0]["seq"] + len(session))
    )
    # What was streamed is what was stored.
    final = {f["message_id"]: f["data"] for f in frames if f["type"] == "message_data"}
    stored = stack.client("alice").get(f"/api/threads/{thread_id}/messages").json()["messages"]
    assert [m["id"] for m in stored] == list(final)
    for row in stored:
        assert (row["content"], row["status"], row["created_at"]) == (
            final[row["id"]]["content"],
            final[row["id"]]["status"],
            final[row["id"]]["created_at"],
        )


def test_daphne_and_the_worker_stream_on_uvloop(stack: Stack, shared_worker: Process) -> None:
    """STUDIO_EVENT_LOOP's default, in the processes as the stack starts them (Daphne through
    ``python -m studio.serve``, the worker's session loop): each says which loop it runs."""
    w = shared_worker
    thread_id = new_thread(stack, "greeter")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "Hi there")
        stream.until(lambda f: f["type"] == "stopped", "the session's stopped frame")
    assert "Daphne runs the uvloop event loop" in stack.daphne.log.read_text()
    assert "Sessions run on a new uvloop event loop" in w.log.read_text()


def test_the_server_listens_with_room_for_a_burst_of_connections(stack: Stack) -> None:
    """``python -m studio.serve`` listens with a backlog of 1024 (``STUDIO_LISTEN_BACKLOG``),
    not Twisted's 50, which a flood of 200 posts opened at once overflowed: one connection was
    reset with no answer (``tests/integration/test_post_flood.py``). ``ss`` shows a listening
    socket's backlog as its Send-Q."""
    shown = subprocess.run(
        ["ss", "-ltnH", f"sport = :{stack.port}"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert shown[:3] == ["LISTEN", "0", "1024"], shown


def test_messages_sent_while_a_session_runs_are_queued_and_handled_in_order(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, "slowpoke")
    post(stack, thread_id, "one")
    wait_until(lambda: assistant_pending(stack, thread_id), "the first reply to start")
    post(stack, thread_id, "two")
    post(stack, thread_id, "three")
    assert messages(stack, thread_id)[-2:] == [
        ("user", "pending", "two"),
        ("user", "pending", "three"),
    ]
    expected = [
        ("user", "completed", "one"),
        ("assistant", "completed", "first answer"),
        ("user", "completed", "two"),
        ("assistant", "completed", "second answer"),
        ("user", "completed", "three"),
        ("assistant", "completed", "third answer"),
    ]
    wait_until(lambda: messages(stack, thread_id) == expected, "all three answers, in order")


def test_stop_aborts_and_parks_then_continue_resumes(stack: Stack, shared_worker: Process) -> None:
    thread_id = new_thread(stack, "sleeper")
    alice = stack.client("alice")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "wake up")
        stream.until(lambda f: kind(f) == ("message_data", "assistant", "pending"), "the request")
        post(stack, thread_id, "parked until continue")
        stopped = alice.post(f"/api/threads/{thread_id}/stop")
        assert stopped.json() == {"status": "stopped", "message": "Thread execution stopped"}
        stream.until(
            lambda f: kind(f) == ("message_data", "system", "completed"), "the stop message"
        )
    assert messages(stack, thread_id) == [
        ("user", "completed", "wake up"),
        ("assistant", "failed", None),
        ("system", "completed", "Execution stopped by user"),
        ("user", "pending", "parked until continue"),
    ]
    assert alice.post(f"/api/threads/{thread_id}/continue", json={"side": "a"}).status_code == 202
    wait_until(
        lambda: (
            messages(stack, thread_id)[3:]
            == [
                ("user", "completed", "parked until continue"),
                ("assistant", "completed", "finally awake"),
            ]
        ),
        "continue to answer the parked message",
    )


def test_two_workers_racing_for_one_session_run_it_once(stack: Stack, worker: Any) -> None:
    workers = [worker("w1"), worker("w2")]
    thread_id = new_thread(stack, "slowpoke")
    post(stack, thread_id, "only once please")
    [(session_id,)] = stack.sql(
        "select id from agents_app_threadsession where thread_id = %s", uuid.UUID(thread_id)
    )
    app = Celery(broker=stack.redis_url)
    duplicates = [  # duplicate deliveries, spread over both workers
        app.send_task("agents_app.run_session", args=[str(session_id)], queue=stack.queue).id
        for _ in range(6)
    ]
    wait_until(
        lambda: (
            messages(stack, thread_id)
            == [
                ("user", "completed", "only once please"),
                ("assistant", "completed", "first answer"),
            ]
        ),
        "the answer",
    )
    # Every duplicate reached a worker and was done with; none may run the session again.
    wait_until(
        lambda: all(handled(workers, task_id) for task_id in duplicates),
        "every duplicate delivery to be handled by a worker",
    )
    wait_until(
        lambda: (
            stack.sql(
                "select count(*) from agents_app_threadsession where status in ('queued','running')"
                " and thread_id = %s",
                uuid.UUID(thread_id),
            )
            == [(0,)]
        ),
        "the session to be released",
    )
    logs = stack.client("alice").get(f"/api/threads/{thread_id}/logs").json()
    assert logs["total"] == 1
    assert len(messages(stack, thread_id)) == 2


def test_a_killed_worker_s_session_is_resumed_by_another(stack: Stack, worker: Any) -> None:
    doomed = worker("w1")
    thread_id = new_thread(stack, "sleeper")
    post(stack, thread_id, "first")
    wait_until(lambda: assistant_pending(stack, thread_id), "the request to be in flight")
    post(stack, thread_id, "second")
    [(owner_before,)] = stack.sql(
        "select owner from agents_app_threadsession where thread_id = %s", uuid.UUID(thread_id)
    )
    doomed.kill_hard()  # kill -9 the whole worker mid-request
    worker("w2", beat=True)  # its beat runs the sweep; the sweep resumes stale sessions
    expected = [
        ("user", "completed", "first"),
        ("assistant", "completed", "finally awake"),
        ("user", "completed", "second"),
        ("assistant", "completed", "still here"),
    ]
    wait_until(lambda: messages(stack, thread_id) == expected, "the resumed session", timeout=60)
    owners = stack.sql(
        "select owner from agents_app_threadsession where thread_id = %s order by created_at",
        uuid.UUID(thread_id),
    )
    assert owners[0][0] != owner_before  # taken over by the other worker
    logs = stack.client("alice").get(f"/api/threads/{thread_id}/logs").json()["logs"]
    assert [log["error_type"] for log in logs] == ["interrupted", None, None]


@pytest.mark.parametrize(
    ("user", "status"),
    [(None, 401), ("bob", 403), ("charlie", 403), ("ops", 200), ("alice", 200)],
)
def test_the_authorization_matrix_over_http_and_websocket(
    stack: Stack, user: str | None, status: int
) -> None:
    thread_id = new_thread(stack, "greeter")
    client = stack.client(user)
    for path in ("", "/messages", "/logs", "/kv", "/fs", "/cost"):
        response = client.get(f"/api/threads/{thread_id}{path}")
        assert response.status_code == status, (path, response.text)
        if status != 200:
            assert set(response.json()) == {"error"}
    missing = uuid.uuid4()
    if user is not None:
        gone = client.get(f"/api/threads/{missing}")
        assert gone.status_code == 404
        assert gone.json() == {"error": f"Thread not found: {missing}"}
    with Watch(stack, f"/api/threads/{thread_id}/stream", user) as socket:
        if status == 200:
            socket.conn.send("stream_ping")
            assert socket.conn.recv(timeout=10) == "stream_pong"
        else:
            frame = socket.until(lambda f: f["type"] == "error", "the refusal")
            assert frame["status"] == status
            with pytest.raises(ConnectionClosed) as closed:
                socket.conn.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4000 + status


def test_websocket_tickets_work_once(stack: Stack) -> None:
    thread_id = new_thread(stack, "greeter")
    path = f"/api/threads/{thread_id}/stream"
    ticket = stack.client("alice").post("/api/auth/websocket-ticket", json={"pathname": path})
    raw = ticket.json()["ticket"]
    with Watch(stack, f"{path}?ticket={raw}", user=None) as socket:
        socket.conn.send("ping")
        assert socket.conn.recv(timeout=10) == "pong"
    with Watch(stack, f"{path}?ticket={raw}", user=None) as again:
        assert again.until(lambda f: f["type"] == "error", "the refusal")["status"] == 401
