"""The client bridge end to end: ``WS /api/threads/{id}/bridge`` delivers tool calls that
run in the client, the client answers over the socket or durably by ``POST …/tool-result``
with the delivery token. Daphne, Celery workers, PostgreSQL, Redis; the seeded
``client-tool-agent`` (tests/integration/seed.py) calls ``lookup_order`` (``client: true``)
once, then answers "all done". Every wait is a bounded poll, no timing assertions.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.integration.stack import Process, Stack, wait_until
from tests.integration.test_live_sessions import Watch, new_thread, post
from tests.integration.test_tool_waits import CALL, pending, replies, session_statuses, tool_row

pytestmark = pytest.mark.integration
AGENT = "client-tool-agent"


def is_request(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "tool_request"


def result(stack: Stack, thread_id: str, body: dict[str, Any]) -> httpx.Response:
    return stack.client("alice").post(
        f"/api/threads/{thread_id}/tool-result", json={"tool_call_id": CALL, **body}
    )


def parked(stack: Stack) -> str:
    """A thread whose session is parked on the client call, no client connected."""
    thread_id = new_thread(stack, AGENT)
    post(stack, thread_id, "Where is my order A-1001?")
    wait_until(lambda: pending(stack, thread_id), "the call to wait for the client")
    wait_until(lambda: session_statuses(stack, thread_id) == ["parked"], "the parked session")
    return thread_id


def test_spec_client_call_is_delivered_over_the_bridge_and_answered_there(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = new_thread(stack, AGENT)
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as bridge:
        ready = bridge.until(lambda f: f["type"] == "bridge_ready", "bridge_ready")
        assert ready["threadId"] == thread_id and ready["owner"] is True
        post(stack, thread_id, "Where is my order A-1001?")
        request = bridge.until(is_request, "the tool_request frame")
        assert request["toolCallId"] == CALL and request["tool"] == "lookup_order"
        assert request["durable"] is True and request["args"] == {"order_id": "A-1001"}
        token = request["deliveryToken"]
        assert isinstance(token, str) and len(token) == 64
        listed = stack.client("alice").get(f"/api/threads/{thread_id}/pending-tool-calls")
        assert listed.json()["pending"][0]["toolCallId"] == CALL
        assert token not in listed.text  # only its hash is stored, never listed
        stored = stack.sql(
            "SELECT metadata::text FROM agents_app_message WHERE tool_call_id = %s", CALL
        )
        assert all(token not in row[0] for row in stored)
        answer = {"type": "tool_response", "toolCallId": CALL, "ok": True, "result": "at the door"}
        bridge.conn.send(json.dumps(answer))
        wait_until(lambda: "all done" in replies(stack, thread_id), "the session to resume")
    row = tool_row(stack, thread_id)
    assert row is not None and row["content"] == "at the door"
    again = result(stack, thread_id, {"ok": True, "result": "late", "delivery_token": token})
    assert again.json() == {"status": "ignored"}  # answered already: nothing changes


def test_spec_a_call_parked_without_a_client_is_delivered_when_one_connects(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = parked(stack)
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as bridge:
        request = bridge.until(is_request, "the parked call, delivered on connect")
    assert request["toolCallId"] == CALL
    missing_token = result(stack, thread_id, {"ok": True, "result": "x"})
    assert missing_token.status_code == 400
    assert missing_token.json() == {"error": "delivery_token required"}
    missing_id = stack.client("alice").post(
        f"/api/threads/{thread_id}/tool-result", json={"ok": True, "delivery_token": "x"}
    )
    assert missing_id.status_code == 400 and missing_id.json() == {"error": "tool_call_id required"}
    forged = result(stack, thread_id, {"ok": True, "result": "forged", "delivery_token": "0" * 64})
    assert forged.status_code == 200 and forged.json() == {"status": "ignored"}
    assert pending(stack, thread_id), "a wrong token must leave the call waiting"
    unknown = stack.client("alice").post(
        f"/api/threads/{thread_id}/tool-result",
        json={"tool_call_id": "nope", "ok": True, "delivery_token": request["deliveryToken"]},
    )
    assert unknown.json() == {"status": "ignored"}
    durable = result(
        stack,
        thread_id,
        {"ok": False, "error": "disk full", "delivery_token": request["deliveryToken"]},
    )
    assert durable.json() == {"status": "resumed", "side": "a"}, durable.text
    wait_until(lambda: "all done" in replies(stack, thread_id), "the session to resume")
    row = tool_row(stack, thread_id)
    assert row is not None and "disk full" in row["content"]


def test_a_new_delivery_replaces_the_token_of_the_previous_one(
    stack: Stack, shared_worker: Process
) -> None:
    thread_id = parked(stack)
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as first:
        old = first.until(is_request, "the first delivery")["deliveryToken"]
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as second:
        new = second.until(is_request, "the second delivery")["deliveryToken"]
    assert new != old
    stale = result(stack, thread_id, {"ok": True, "result": "stale", "delivery_token": old})
    assert stale.json() == {"status": "ignored"}
    fresh = result(stack, thread_id, {"ok": True, "result": "fresh", "delivery_token": new})
    assert fresh.json()["status"] == "resumed"
    wait_until(lambda: "all done" in replies(stack, thread_id), "the session to resume")
    row = tool_row(stack, thread_id)
    assert row is not None and row["content"] == "fresh"


def test_worker_killed_while_the_client_runs_the_call_resumes_on_another(
    stack: Stack, worker: Any
) -> None:
    first = worker("w1")
    thread_id = parked(stack)
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as bridge:
        token = bridge.until(is_request, "the delivery")["deliveryToken"]
    first.kill_hard()  # no worker holds the parked session while the client works
    worker("w2")
    answer = result(
        stack, thread_id, {"ok": True, "result": "at the door", "delivery_token": token}
    )
    assert answer.json()["status"] == "resumed", answer.text
    wait_until(lambda: "all done" in replies(stack, thread_id), "w2 to resume the session")
    row = tool_row(stack, thread_id)
    assert row is not None and row["content"] == "at the door"


def test_two_racing_client_results_exactly_one_wins(stack: Stack, shared_worker: Process) -> None:
    thread_id = parked(stack)
    with Watch(stack, f"/api/threads/{thread_id}/bridge") as bridge:
        token = bridge.until(is_request, "the delivery")["deliveryToken"]
    answers: list[httpx.Response] = []
    barrier = threading.Barrier(2)

    def send(text: str) -> None:
        barrier.wait()
        answers.append(
            result(stack, thread_id, {"ok": True, "result": text, "delivery_token": token})
        )

    racers = [threading.Thread(target=send, args=(t,)) for t in ("first", "second")]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    statuses = sorted(a.json()["status"] for a in answers)
    assert statuses == ["ignored", "resumed"], [a.text for a in answers]
    wait_until(lambda: "all done" in replies(stack, thread_id), "the winner's result to run")
    assert session_statuses(stack, thread_id) == ["completed"]
    row = tool_row(stack, thread_id)
    assert row is not None and row["content"] in ("first", "second")


def test_bridge_refuses_sockets_without_access(stack: Stack, worker: Any) -> None:
    thread_id = new_thread(stack, AGENT)
    with Watch(stack, f"/api/threads/{thread_id}/bridge", user=None) as anonymous:
        refusal = anonymous.until(lambda f: f["type"] == "error", "the refusal")
    assert refusal["status"] == 401
    with Watch(stack, f"/api/threads/{thread_id}/bridge", user="bob") as stranger:
        refusal = stranger.until(lambda f: f["type"] == "error", "the refusal")
    assert refusal["status"] in (403, 404)


def test_a_newer_socket_of_the_same_client_supersedes_the_older(stack: Stack) -> None:
    thread_id = new_thread(stack, AGENT)
    path = f"/api/threads/{thread_id}/bridge?client_id=cli:laptop"
    with Watch(stack, path) as old:
        old.until(lambda f: f["type"] == "bridge_ready", "the first bridge_ready")
        with Watch(stack, path) as new, Watch(stack, path.replace("laptop", "vps")) as other:
            new.until(lambda f: f["type"] == "bridge_ready", "the second bridge_ready")
            other.until(lambda f: f["type"] == "bridge_ready", "another client's bridge_ready")
            old.until(lambda f: f["type"] == "superseded", "the superseded frame")
            with pytest.raises(ConnectionClosed) as closed:
                old.until(lambda f: False, "the close")
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
            other.conn.send("stream_ping")
            assert other.conn.recv(timeout=30) == "stream_pong"  # another client stays
            new.conn.send("stream_ping")
            assert new.conn.recv(timeout=30) == "stream_pong"


# --- sockets follow their credentials (issue #36, item 5) ------------------------------------


def _key_of_its_own(stack: Stack) -> tuple[int, str, str]:
    """A new key of alice's (id, raw key), and the login token that made it and revokes it."""
    login = httpx.post(
        f"{stack.http}/api/auth/login",
        json={"username": "alice", "password": "pw-for-tests-1"},
        timeout=30,
    )
    token = login.json()["token"]
    made = httpx.post(
        f"{stack.http}/api/api-keys",
        json={"name": "bridge laptop"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert made.status_code == 201, made.text
    return int(made.json()["id"]), made.json()["key"], token


class KeyWatch(Watch):
    """A bridge socket opened with the given raw key."""

    def __init__(self, stack: Stack, path: str, raw_key: str) -> None:
        headers = {"Authorization": f"Bearer {raw_key}"}
        self.conn = connect(stack.ws + path, additional_headers=headers, legacy=True)
        self.frames: list[dict[str, Any]] = []


def _closed(watch: Watch) -> int:
    with pytest.raises(ConnectionClosed) as closed:
        watch.until(lambda f: False, "the close")
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


REVOKED = "Unauthorized: the credential this socket was opened with was revoked"


def test_revoked_key_closes_its_sockets(stack: Stack, shared_worker: Process) -> None:
    thread_id = parked(stack)
    key_id, raw_key, token = _key_of_its_own(stack)
    path = f"/api/threads/{thread_id}/bridge"
    with KeyWatch(stack, path, raw_key) as bridge:
        bridge.until(is_request, "the parked call, delivered on connect")
        revoked = httpx.delete(
            f"{stack.http}/api/api-keys/{key_id}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert revoked.json() == {"success": True}
        error = bridge.until(lambda f: f["type"] == "error", "the revocation frame")
        assert error == {"type": "error", "error": REVOKED, "status": 401}
        assert _closed(bridge) == 4401
    assert pending(stack, thread_id), "the call waits for a client with a valid credential"
    with Watch(stack, path) as another:
        request = another.until(is_request, "the call, delivered to the next client")
    assert request["toolCallId"] == CALL


def test_stale_bridge_answer_is_refused(stack: Stack, shared_worker: Process) -> None:
    # The key is revoked and its sockets' message is lost (the Pub/Sub layer delivers at most
    # once; here the row is revoked behind the web process's back): the socket is still
    # open when its client answers, and that answer must not become the tool's result.
    thread_id = parked(stack)
    key_id, raw_key, _ = _key_of_its_own(stack)
    with KeyWatch(stack, f"/api/threads/{thread_id}/bridge", raw_key) as bridge:
        bridge.until(is_request, "the parked call")
        stack.sql(
            "UPDATE agents_app_apikey SET revoked_at = now() WHERE id = %s RETURNING id", key_id
        )
        answer = {"type": "tool_response", "toolCallId": CALL, "ok": True, "result": "stale"}
        bridge.conn.send(json.dumps(answer))
        error = bridge.until(lambda f: f["type"] == "error", "the refusal")
        assert error["status"] == 401
        assert _closed(bridge) == 4401
    assert [p["toolCallId"] for p in pending(stack, thread_id)] == [CALL]
    assert session_statuses(stack, thread_id) == ["parked"]
    row = tool_row(stack, thread_id)
    assert row is not None and row["content"] != "stale"
