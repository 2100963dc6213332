"""The reference's own client, on the wire: sign in with a password, browse and edit
definitions, open a thread, watch its message and log sockets, read log detail.

Requests and frame handling follow the reference client (``@standardagents/builder``'s
studio, ``../shared/reference/reference-behavior.md`` §2–3): JSON login without a CSRF
header, the returned token as ``Authorization: Bearer``, one-time tickets minted for the
exact socket path, the logs socket at ``/api/threads/{id}``, ``log_data`` patches merged
by ``log_id``, literal ``pong``/``stream_pong`` frames ignored. Real Daphne, Celery,
PostgreSQL and Redis; the model is the scripted ``test`` provider.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.integration.stack import Stack, wait_until

pytestmark = pytest.mark.integration

Frame = dict[str, Any]
PASSWORD = "pw-for-tests-1"  # tests/integration/seed.py
# Names of our internal log fields that must never reach a reference client.
INTERNAL_LOG_FIELDS = {"model_id", "parent_id", "retry_of_id"}


@pytest.fixture(scope="module")
def ref_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # Its own stack: the sign-in limit is counted per client address, taken from
    # X-Forwarded-For here, so the limit test cannot lock other tests out.
    running = Stack(
        Path(tmp_path_factory.mktemp("refwire")),
        # A short bridge liveness, so the unresponsive-client case ends quickly.
        extra_env={
            "STUDIO_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
            "STUDIO_BRIDGE_LIVENESS_SECONDS": "2",
        },
    ).start()
    running.worker("refwire")
    try:
        yield running
    finally:
        running.stop()


class ReferenceClient:
    """What the reference studio does over HTTP: a bearer token from the login answer."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.http = httpx.Client(base_url=stack.http, timeout=30)
        self.token = ""

    def login(self, username: str, password: str, address: str = "192.0.2.10") -> httpx.Response:
        response = self.http.post(
            "/api/auth/login",
            json={"username": username, "password": password},
            headers={"X-Forwarded-For": address},
        )
        if response.status_code == 200:
            self.token = response.json()["token"]
            self.http.headers["Authorization"] = f"Bearer {self.token}"
        return response

    def get(self, path: str) -> httpx.Response:
        return self.http.get(path)

    def socket_url(self, pathname: str, query: str = "") -> str:
        """mintWebSocketUrl: a ticket for exactly ``pathname``, then ``?ticket=``."""
        minted = self.http.post("/api/auth/websocket-ticket", json={"pathname": pathname})
        assert minted.status_code == 200, minted.text
        body = minted.json()
        assert len(body["ticket"]) == 64 and body["expires_in"] == 30
        extra = f"&{query}" if query else ""
        return f"{self.stack.ws}{pathname}?ticket={body['ticket']}{extra}"


class Socket:
    """A socket the way the reference client reads it: JSON frames, keep-alive strings
    ignored, ``log_data`` patches merged into rows by ``log_id``."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.conn: ClientConnection = connect(url, additional_headers=headers or {}).__enter__()
        self.frames: list[Frame] = []
        self.logs: dict[str, dict[str, Any]] = {}

    def close(self) -> None:
        self.conn.close()

    def until(self, predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{what}: not seen; frames {self.frames[-20:]}")
            try:
                raw = self.conn.recv(timeout=remaining)
            except TimeoutError:
                continue
            if raw in ("pong", "stream_pong"):
                continue
            frame = json.loads(raw)
            self.frames.append(frame)
            if frame.get("type") == "log_data":
                self.logs.setdefault(frame["log_id"], {}).update(frame["data"])

    def types(self) -> list[str]:
        return [str(f.get("type")) for f in self.frames]


def _define(client: ReferenceClient) -> None:
    """The studio's model, prompt and agent pages, saving in their snake_case shapes."""
    model = {
        "name": "rw-model",
        "provider": "test",
        "model": "scripted",
        "input_price": 1.0,
        "output_price": 2.0,
        "script": [
            {"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]},
            {"content": "Order A-1001 has shipped."},
        ],
    }
    created = client.http.post("/api/models", json=model)
    assert created.status_code == 201, created.text
    assert created.json()["success"] is True and created.json()["model"]["name"] == "rw-model"
    again = client.http.post("/api/models", json=model)
    assert again.status_code == 409, again.text

    bad = client.http.post(
        "/api/prompts", json={"name": "rw-bad", "model_id": "no-such-model", "prompt": "x"}
    )
    assert bad.status_code == 400 and bad.json()["error"] == "Validation failed", bad.text
    assert bad.json()["fieldErrors"], bad.text

    prompt = {
        "name": "rw-prompt",
        "model_id": "rw-model",
        "model_name": "scripted",  # read-only listing field, sent back by the editor
        "prompt": "You help with orders.",
        "include_chat": True,
        "tools": ["lookup_order"],
    }
    created = client.http.post("/api/prompts", json=prompt)
    assert created.status_code == 201, created.text
    assert created.json()["prompt"]["tools"] == ["lookup_order"]
    unknown = client.http.put("/api/prompts/rw-prompt", json={"temperature_knob": 3})
    assert unknown.status_code == 400, unknown.text  # never accepted and then ignored

    agent = {"name": "rw-agent", "title": "Orders", "side_a_agent_prompt": "rw-prompt"}
    created = client.http.post("/api/agents", json=agent)
    assert created.status_code == 201, created.text
    renamed = client.http.put("/api/agents/rw-agent", json={"title": "Order desk"})
    assert renamed.status_code == 200, renamed.text
    assert client.get("/api/agents/rw-agent").json()["agent"]["title"] == "Order desk"

    in_use = client.http.delete("/api/models/rw-model")
    assert in_use.status_code == 409, in_use.text
    spare = {"name": "rw-spare", "provider": "test", "model": "scripted"}
    assert client.http.post("/api/models", json=spare).status_code == 201
    deleted = client.http.delete("/api/models/rw-spare")
    assert deleted.json() == {"success": True, "deleted": "rw-spare", "filePath": None}
    assert client.get("/api/models/rw-spare").status_code == 404


def test_the_reference_client_signs_in_edits_definitions_and_watches_a_thread(
    ref_stack: Stack,
) -> None:
    stack = ref_stack
    anonymous = httpx.Client(base_url=stack.http, timeout=30)
    # Public routes the studio reads before signing in.
    auth_config = anonymous.get("/api/auth/config")
    assert auth_config.status_code == 200 and auth_config.json()["localPassword"] is True
    assert anonymous.get("/api/config").status_code == 200
    icon = anonymous.get("/api/providers/openai/icon")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")

    client = ReferenceClient(stack)
    signed_in = client.login("ops", PASSWORD)
    assert signed_in.status_code == 200, signed_in.text
    assert signed_in.json()["token"].startswith("agtuser_")
    assert signed_in.json()["user"]["username"] == "ops"
    assert "no-store" in signed_in.headers["cache-control"]
    assert "sessionid" not in signed_in.cookies  # a token client gets no cookie
    me = client.get("/api/auth/me").json()
    assert me["user"]["username"] == "ops" and me["authType"] == "session"

    providers = client.get("/api/providers").json()["providers"]
    assert {"openai", "anthropic", "google", "openrouter", "test"} <= {p["name"] for p in providers}
    assert all("api_key" not in p for p in providers)
    assert isinstance(client.get("/api/diagnostics").json()["warnings"], list)

    _define(client)

    needs = client.get("/api/variables/agents/rw-agent")
    assert needs.status_code == 200, needs.text
    assert needs.json() == {"variables": []}  # the test provider needs no key

    thread = client.http.post("/api/threads", json={"agent_id": "rw-agent"})
    assert thread.status_code == 200, thread.text
    thread_id = thread.json()["threadId"]
    stream = Socket(client.socket_url(f"/api/threads/{thread_id}/stream", "depth=0"))
    logs = Socket(client.socket_url(f"/api/threads/{thread_id}"))  # the studio's log socket
    # A bearer header works for sockets too (clients that can send headers).
    header_socket = Socket(
        f"{stack.ws}/api/threads/{thread_id}/logs",
        {"Authorization": f"Bearer {client.token}"},
    )
    header_socket.conn.send("stream_ping")
    assert header_socket.conn.recv(timeout=30) == "stream_pong"
    header_socket.close()

    posted = client.http.post(f"/api/threads/{thread_id}/messages", json={"content": "A-1001?"})
    assert posted.status_code == 202, posted.text
    stream.until(lambda: "stopped" in stream.types(), "the session's stopped frame")
    for frame in stream.frames:
        if "timestamp" in frame:  # reference timestamps: integer milliseconds since epoch
            assert isinstance(frame["timestamp"], int) and frame["timestamp"] > 10**12, frame

    def llm_done() -> dict[str, Any] | None:
        return next(
            (
                row
                for row in logs.logs.values()
                if row.get("kind") == "llm" and row.get("is_complete") and row.get("tools_called")
            ),
            None,
        )

    def tool_row() -> dict[str, Any] | None:
        return next((r for r in logs.logs.values() if r.get("kind") == "tool"), None)

    logs.until(lambda: llm_done() is not None and tool_row() is not None, "log rows")
    llm, tool = llm_done(), tool_row()
    assert llm is not None and tool is not None
    # The reference: `model` the definition, `model_name` the provider's model id.
    assert llm["model"] == "rw-model" and llm["model_name"] == "scripted"
    assert isinstance(llm["tools_called"], str)  # a JSON-encoded string, as the reference
    assert json.loads(llm["tools_called"]) == ["lookup_order"]
    assert tool["parent_log_id"] == llm["id"]
    assert "retry_of_log_id" in llm and llm["retry_of_log_id"] is None
    for frame in logs.frames:
        if frame["type"] == "log_data":
            assert not INTERNAL_LOG_FIELDS & set(frame["data"]), frame
            assert "request_body" not in frame["data"] and "response_body" not in frame["data"]
    stream.close()
    logs.close()

    # History over HTTP: the same names; log detail bodies as JSON strings.
    page = client.get(f"/api/threads/{thread_id}/logs").json()
    rows = {row["id"]: row for row in page["logs"]}
    assert rows[llm["id"]]["tools_called"] == '["lookup_order"]'
    assert rows[tool["id"]]["parent_log_id"] == llm["id"]
    assert not INTERNAL_LOG_FIELDS & set(rows[llm["id"]])
    detail = client.get(f"/api/threads/{thread_id}/logs/{llm['id']}").json()
    assert isinstance(detail["request_body"], str) and isinstance(detail["response_body"], str)
    sent = json.loads(detail["request_body"])
    assert sent["messages"][-1]["content"] == "A-1001?"
    assert json.loads(detail["response_body"])["tool_calls"][0]["function"]["name"] == (
        "lookup_order"
    )

    # "View as" another provider's request.
    as_openai = client.get(f"/api/threads/{thread_id}/logs/{llm['id']}/inspect/openai")
    assert as_openai.status_code == 200, as_openai.text
    assert as_openai.json()["model"] == "scripted"
    assert as_openai.json()["messages"][-1]["content"] == "A-1001?"
    as_anthropic = client.get(f"/api/threads/{thread_id}/logs/{llm['id']}/inspect/anthropic")
    assert as_anthropic.status_code == 200 and "max_tokens" in as_anthropic.json()
    unknown = client.get(f"/api/threads/{thread_id}/logs/{llm['id']}/inspect/nobody")
    assert unknown.status_code == 400 and unknown.json()["error"] == "Unknown provider: nobody"

    health = client.get(f"/api/threads/{thread_id}/diagnostics")
    assert health.status_code == 200, health.text
    assert health.json()["terminated"] is False
    assert health.json()["thread"]["messageQueueCount"] == 0

    # Logging out revokes the token: HTTP, tickets and sockets refuse it.
    assert client.http.post("/api/auth/logout").json() == {"success": True}
    assert client.get("/api/auth/me").status_code == 401
    assert (
        client.http.post(
            "/api/auth/websocket-ticket", json={"pathname": f"/api/threads/{thread_id}"}
        ).status_code
        == 401
    )
    refused = Socket(
        f"{stack.ws}/api/threads/{thread_id}", {"Authorization": f"Bearer {client.token}"}
    )
    refused.until(lambda: "error" in refused.types(), "the refusal")
    assert refused.frames[-1]["status"] == 401
    refused.close()


def test_password_login_is_limited_like_every_sign_in(ref_stack: Stack) -> None:
    client = ReferenceClient(ref_stack)
    address = "198.51.100.7"
    statuses = [client.login("bob", "wrong", address).status_code for _ in range(12)]
    assert statuses[0] == 401 and statuses[-1] == 429, statuses
    # Even the right password waits until the window passes; no token is minted.
    late = client.login("bob", PASSWORD, address)
    assert late.status_code == 429 and "token" not in late.json()
    assert "Retry-After" in late.headers
    # Another address (another client) still signs in.
    assert client.login("bob", PASSWORD, "198.51.100.8").status_code == 200
    wait_until(lambda: client.get("/api/auth/me").status_code == 200, "the token to work")


def test_the_reference_bridge_client_runs_a_client_tool(ref_stack: Stack) -> None:
    """The reference's CLI: a ticket for ``/api/threads/{id}/bridge``, ``bridge_ready``,
    ``tool_request`` with ``deliveryToken``, keep-alive pings while it works, then the
    durable ``POST …/tool-result`` body with that token."""
    stack = ref_stack
    client = ReferenceClient(stack)
    assert client.login("ops", PASSWORD, "192.0.2.30").status_code == 200
    thread_id = client.http.post("/api/threads", json={"agent_id": "client-tool-agent"}).json()[
        "threadId"
    ]
    posted = client.http.post(f"/api/threads/{thread_id}/messages", json={"content": "A-1001?"})
    assert posted.status_code == 202, posted.text
    wait_until(
        lambda: client.get(f"/api/threads/{thread_id}/pending-tool-calls").json()["pending"],
        "the call to park with no client connected",
    )
    listed = client.get(f"/api/threads/{thread_id}/pending-tool-calls").json()["pending"]
    assert listed[0]["toolCallId"] == "call_wait_1" and listed[0]["tool"] == "lookup_order"

    # A client that takes the call and then goes silent loses it (liveness), still parked.
    silent = Socket(client.socket_url(f"/api/threads/{thread_id}/bridge"))
    silent.until(lambda: "tool_request" in silent.types(), "the first delivery")
    first = next(f for f in silent.frames if f["type"] == "tool_request")
    with pytest.raises(ConnectionClosed) as closed:
        silent.until(lambda: False, "the liveness close")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4408

    bridge = Socket(
        client.socket_url(f"/api/threads/{thread_id}/bridge", "client_id=cli:test&claim=if_unowned")
    )
    bridge.until(lambda: "tool_request" in bridge.types(), "the re-delivery")
    ready = bridge.frames[0]
    assert ready["type"] == "bridge_ready" and ready["threadId"] == thread_id
    request = next(f for f in bridge.frames if f["type"] == "tool_request")
    assert request["toolCallId"] == "call_wait_1" and request["args"] == {"order_id": "A-1001"}
    assert request["durable"] is True and request["generation"] == 0
    assert request["deliveryToken"] != first["deliveryToken"]
    bridge.conn.send("stream_ping")  # the CLI's keep-alive while it runs the tool
    bridge.until(lambda: True, "the pong")
    stale = client.http.post(
        f"/api/threads/{thread_id}/tool-result",
        json={
            "tool_call_id": "call_wait_1",
            "ok": True,
            "result": "stale",
            "delivery_token": first["deliveryToken"],
        },
    )
    assert stale.status_code == 200 and stale.json() == {"status": "ignored"}
    answered = client.http.post(
        f"/api/threads/{thread_id}/tool-result",
        json={
            "tool_call_id": "call_wait_1",
            "ok": True,
            "result": "at the door",
            "client_id": "cli:test",
            "generation": 0,
            "delivery_token": request["deliveryToken"],
        },
    )
    assert answered.json() == {"status": "resumed", "side": "a"}, answered.text
    bridge.close()

    def replies() -> list[str]:
        page = client.get(f"/api/threads/{thread_id}/messages").json()["messages"]
        return [m["content"] for m in page if m["role"] in ("assistant", "tool") and m["content"]]

    wait_until(lambda: "all done" in replies(), "the session to resume")
    assert "at the door" in replies()
    assert client.get(f"/api/threads/{thread_id}/pending-tool-calls").json() == {"pending": []}


def test_the_reference_studio_renames_a_prompt_and_copies_a_model_s_curl(ref_stack: Stack) -> None:
    client = ReferenceClient(ref_stack)
    assert client.login("ops", PASSWORD, "192.0.2.31").status_code == 200
    model = {"name": "rn-model", "provider": "openai", "model": "gpt-4o-mini"}
    assert client.http.post("/api/models", json=model).status_code == 201
    for body in (
        {"name": "rn-inner", "model_id": "rn-model", "prompt": "Inner."},
        {"name": "rn-outer", "model_id": "rn-model", "prompt": "Outer.", "tools": ["rn-inner"]},
    ):
        assert client.http.post("/api/prompts", json=body).status_code == 201
    agent = {"name": "rn-agent", "title": "Rename", "side_a_agent_prompt": "rn-inner"}
    assert client.http.post("/api/agents", json=agent).status_code == 201

    # The prompt page saves with a new name: the reference's PUT answer, references moved.
    edited = client.get("/api/prompts/rn-inner").json()["prompt"]
    renamed = client.http.put("/api/prompts/rn-inner", json={**edited, "name": "rn-inner-2"})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["renamed"] == {"from": "rn-inner", "to": "rn-inner-2"}
    assert renamed.json()["updatedPrompts"] == ["rn-outer"]
    assert renamed.json()["updatedAgents"] == ["rn-agent"]
    assert client.get("/api/prompts/rn-outer").json()["prompt"]["tools"] == ["rn-inner-2"]
    assert client.get("/api/agents/rn-agent").json()["agent"]["side_a_agent_prompt"] == (
        "rn-inner-2"
    )

    # The log page's "Copy cURL": the key stays a shell variable.
    planted = "sk-planted-in-refclient-5b1e"
    patched = client.http.patch(
        "/api/envs/instance",
        json={
            "env_patch": {"OPENAI_API_KEY": planted},
            "env_type_patch": {"OPENAI_API_KEY": "secret"},
        },
    )
    assert patched.status_code == 200, patched.text
    curl = client.get("/api/models/rn-model/curl-data")
    assert curl.status_code == 200 and planted not in curl.text
    assert "${OPENAI_API_KEY}" in curl.json()["curl"]
    client.http.patch("/api/envs/instance", json={"env_delete": ["OPENAI_API_KEY"]})

    # The other reads of the studio's pages, with these names: each answers JSON.
    thread_id = client.http.post("/api/threads", json={"agent_id": "rn-agent"}).json()["threadId"]
    reads = [
        "/api/handlers",
        "/api/threads/owners",
        "/api/variables/agents/rn-agent",
        "/api/variables/prompts/rn-outer",
        "/api/tools?type=prompts&schema=true",
        f"/api/variables/agents/rn-agent?thread_id={thread_id}",
        f"/api/threads/{thread_id}/cost",
        f"/api/threads/{thread_id}/diagnostics",
        f"/api/threads/{thread_id}/fs?find=**/*&type=file",
    ]
    for path in reads:
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text)
        answer.json()
    revived = client.http.post(f"/api/threads/{thread_id}/revive")
    assert revived.status_code == 200 and revived.json()["verdict"] == "idle", revived.text
