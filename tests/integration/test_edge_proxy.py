"""The edge of ``docker/compose.yaml``: a real nginx running ``docker/nginx/edge.conf`` verbatim
(only its port changed) in front of two Daphne processes of the same application, one playing
``web`` (the stack's own) and one playing ``sockets``.

Everything goes through the edge's port: a reply streamed to a WebSocket while the post that
started it went over HTTP, with the Daphnes' access logs showing which process got what; an
upload past nginx's default body limit stored intact; long URLs and headers answered by the
app's own JSON limits; ``X-Forwarded-Proto`` and ``X-Forwarded-For`` reaching Django
unchanged, seen through HSTS (only sent on a request Django takes for HTTPS) and the sign-in
limit per client address. Every wait is a bounded poll, no timing assertions.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import yaml
from websockets.sync.client import ClientConnection, connect

from tests.integration.edge import EDGE_CONF, start_daphne, start_nginx, worker_settings
from tests.integration.stack import ROOT, Process, Stack, free_port, wait_until

pytestmark = pytest.mark.integration

UPSTREAMS_CONF = ROOT / "docker" / "nginx" / "upstreams.conf"
GREETING = "Hello Alice! How can I help you today?"  # the seeded greeter's reply
LOGIN_FAILURES_PER_ADDRESS = 3

Frame = dict[str, Any]


@dataclass
class Edge:
    """The edge's port and the two Daphne processes behind it."""

    stack: Stack
    port: int
    web: Process
    sockets: Process

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def client(self, user: str | None = "alice") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.stack.keys[user]}"} if user else {}
        return httpx.Client(base_url=self.http, headers=headers, timeout=60)


def access_log(process: Process) -> list[str]:
    """Daphne's access log lines (``"POST /path" 202``, ``"WSCONNECT /path"``) in its output."""
    return [line for line in process.log.read_text(errors="replace").splitlines() if '"' in line]


def logged(process: Process, request: str) -> bool:
    """Whether ``process`` logged ``request`` (``POST /api/...``), as Daphne writes it."""
    return any(f'"{request}"' in line for line in access_log(process))


# Settings that make the forwarded headers visible from outside: HSTS is sent only on a request
# Django takes for HTTPS (SECURE_PROXY_SSL_HEADER); sign-in failures are counted per client
# address, taken from X-Forwarded-For, and a few lock that address out.
STACK_ENV = {
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "SECURE_HSTS_SECONDS": "3600",
    "STUDIO_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
    "STUDIO_LOGIN_RATE_PER_ADDRESS": f"{LOGIN_FAILURES_PER_ADDRESS}/h",
    # Daphne's access log (stdout) reaches its log file line by line, as requests end.
    "PYTHONUNBUFFERED": "1",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """This module's own stack (named ``stack`` so failures print its processes' logs): the
    sign-in limit it counts must not lock other modules out."""
    running = Stack(tmp_path_factory.mktemp("edge-stack"), extra_env=STACK_ENV).start()
    try:
        yield running
    finally:
        running.stop()  # the sockets Daphne, the worker and nginx too: all spawned by it


@pytest.fixture(scope="module")
def edge(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Edge:
    sockets, sockets_port = start_daphne(stack, "sockets")
    worker = stack.worker("edge-worker")
    wait_until(
        lambda: " ready." in worker.log.read_text(errors="replace"),
        "the worker to consume",
        timeout=120,
    )
    port = start_nginx(
        stack, tmp_path_factory.mktemp("nginx"), web_port=stack.port, sockets_port=sockets_port
    )
    return Edge(stack, port, stack.daphne, sockets)


# --- WebSockets --------------------------------------------------------------------------


class Watch:
    """A WebSocket through the edge that keeps every frame it received."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        # Entered at once: the handshake (and its refusal, if any) happens here.
        self.conn: ClientConnection = connect(url, additional_headers=headers or {}).__enter__()
        self.frames: list[Frame] = []

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.conn.close()

    def until(self, predicate: Callable[[Frame], bool], what: str, timeout: float = 60) -> Frame:
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
            if raw in ("pong", "stream_pong"):
                continue
            frame = json.loads(raw)
            self.frames.append(frame)
            if predicate(frame):
                return frame


def kind(frame: Frame) -> tuple[Any, ...]:
    data = frame.get("data") if frame["type"] == "message_data" else None
    return (frame["type"], data["role"], data["status"]) if data else (frame["type"],)


def new_thread(alice: httpx.Client, agent: str = "greeter") -> str:
    response = alice.post("/api/threads", json={"agent_id": agent})
    assert response.status_code == 200, response.text
    return str(response.json()["threadId"])


# --- tests -------------------------------------------------------------------------------


def test_a_post_over_http_streams_its_reply_to_a_socket_held_by_the_other_process(
    edge: Edge,
) -> None:
    alice = edge.client()
    thread = new_thread(alice)
    stream_path = f"/api/threads/{thread}/stream"
    post_path = f"/api/threads/{thread}/messages"
    bearer = {"Authorization": f"Bearer {edge.stack.keys['alice']}"}
    with Watch(edge.ws + stream_path, bearer) as stream:
        posted = alice.post(post_path, json={"content": "hello through the edge"})
        assert posted.status_code == 202, posted.text
        stream.until(lambda f: f["type"] == "stopped", "the session's stopped frame")
    kinds = [kind(f) for f in stream.frames]
    assert ("message_data", "assistant", "completed") in kinds, kinds
    reply = "".join(f["chunk"] for f in stream.frames if f["type"] == "message_chunk")
    assert reply == GREETING

    # The split really happened: the post on web, the socket's handshake on sockets.
    wait_until(lambda: logged(edge.web, f"POST {post_path}"), "web to log the post")
    wait_until(lambda: logged(edge.sockets, f"WSCONNECT {stream_path}"), "sockets to log the WS")
    assert not logged(edge.sockets, f"POST {post_path}"), access_log(edge.sockets)
    assert not any(stream_path in line for line in access_log(edge.web)), access_log(edge.web)

    # A one-time ticket minted over HTTP (stored by web) opens a socket on sockets: the
    # reference client's way in, with no Authorization header on the socket.
    minted = alice.post("/api/auth/websocket-ticket", json={"pathname": stream_path})
    assert minted.status_code == 200, minted.text
    with Watch(f"{edge.ws}{stream_path}?ticket={minted.json()['ticket']}") as ticketed:
        second = alice.post(post_path, json={"content": "and again"})
        assert second.status_code == 202, second.text
        ticketed.until(lambda f: f["type"] == "stopped", "the second session's stopped frame")
    handshakes = f'"WSCONNECT {stream_path}"'
    wait_until(
        lambda: sum(handshakes in line for line in access_log(edge.sockets)) == 2,
        "sockets to log the ticketed WS",
    )


def test_an_upload_past_nginx_default_body_limit_is_stored_intact(edge: Edge) -> None:
    alice = edge.client()
    thread = new_thread(alice)
    path = f"/api/threads/{thread}/fs/uploads/blob.bin"
    data = os.urandom(3 * 1024 * 1024)  # nginx refuses bodies over 1 MiB by default (413)
    stored = alice.post(path, content=data, headers={"Content-Type": "application/octet-stream"})
    assert stored.status_code == 201, stored.text
    # Chunked, as a client streaming a file of unknown length sends it: passed on as it comes.
    pieces = [data[i : i + 256 * 1024] for i in range(0, len(data), 256 * 1024)]
    chunked = alice.post(
        f"{path}.chunked",
        content=iter(pieces),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert chunked.status_code == 201, chunked.text
    for name in (path, f"{path}.chunked"):
        read = alice.get(name)
        assert read.status_code == 200, read.text
        assert read.content == data, f"{name}: {len(read.content)} bytes back of {len(data)}"
    wait_until(lambda: logged(edge.web, f"POST {path}"), "web to log the upload")


@pytest.mark.parametrize(
    ("length", "limit"),
    # Past the app's URL limit (8 KB) and past Daphne's line limit (16 KB): both over nginx's
    # default 8 KB header buffer, which would answer first with its own HTML page.
    [(9_000, "8192"), (17_000, "16384")],
)
def test_long_urls_get_the_apps_own_json_414(edge: Edge, length: int, limit: str) -> None:
    response = edge.client().get("/api/threads/" + "a" * length)
    assert response.status_code == 414, response.text[:200]
    assert response.json() == {"error": f"URL too long: the limit is {limit} bytes"}


def test_a_long_header_gets_the_apps_own_json_431(edge: Edge) -> None:
    response = edge.client(None).get("/api/auth/csrf", headers={"X-Big": "b" * 20_000})
    assert response.status_code == 431, response.text[:200]
    assert response.json() == {"error": "Request header too large"}


def test_a_pool_that_does_not_answer_gets_a_json_503_with_retry_after(
    edge: Edge, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A second edge whose pools listen nowhere: what clients see while Daphne restarts.
    down = start_nginx(
        edge.stack,
        tmp_path_factory.mktemp("nginx-down"),
        web_port=free_port(),
        sockets_port=free_port(),
        name="edge-down",
    )
    for method, path in (("GET", "/api/threads"), ("POST", "/api/threads"), ("GET", "/chat/")):
        response = httpx.request(method, f"http://127.0.0.1:{down}{path}", timeout=30)
        assert response.status_code == 503, response.text[:200]
        assert response.headers["content-type"] == "application/json"
        assert response.headers["retry-after"] == "5"
        assert "try again" in response.json()["error"]
        assert "nginx" not in response.text
    upgrade = httpx.get(
        f"http://127.0.0.1:{down}/api/threads/x/stream",
        headers={"Upgrade": "websocket", "Connection": "Upgrade"},
        timeout=30,
    )
    assert upgrade.status_code == 503 and upgrade.json()["error"]
    # The working edge is unaffected.
    assert edge.client().get("/api/threads").status_code == 200


def test_x_forwarded_proto_reaches_django_unchanged(edge: Edge) -> None:
    with edge.client(None) as anonymous:
        behind_tls = anonymous.get("/api/auth/csrf", headers={"X-Forwarded-Proto": "https"})
        plain = anonymous.get("/api/auth/csrf")
    assert behind_tls.status_code == plain.status_code == 200
    # Django sends HSTS only on a request it takes for HTTPS: it saw the TLS proxy's header.
    assert behind_tls.headers.get("strict-transport-security") == "max-age=3600"
    assert "strict-transport-security" not in plain.headers


def test_x_forwarded_for_reaches_django_unchanged(edge: Edge) -> None:
    """Django takes the client from the last X-Forwarded-For entry (one trusted proxy): an
    edge that appended its own hop, replaced or dropped the header would make every client
    127.0.0.1, so the second address below would be refused with the first."""
    run = uuid.uuid4().hex[:6]
    first, second = "198.51.100.7", "198.51.100.8"

    def fail_login(forwarded_for: str, n: int) -> int:
        with edge.client(None) as anonymous:
            return anonymous.post(
                "/api/auth/login",
                json={"username": f"nobody-{run}-{n}", "password": "wrong-password"},
                headers={"X-Forwarded-For": forwarded_for},
            ).status_code

    failures = [fail_login(first, n) for n in range(LOGIN_FAILURES_PER_ADDRESS)]
    assert failures == [401] * LOGIN_FAILURES_PER_ADDRESS
    assert fail_login(first, 10) == 429  # this address used its failures up
    # The entry the TLS proxy appended is the client, whatever the client claimed before it.
    assert fail_login(f"203.0.113.50, {first}", 11) == 429
    assert fail_login(f"{first}, {second}", 12) == 401
    assert fail_login(second, 13) == 401


def test_the_upstreams_are_the_compose_services_and_the_edge_routes_between_them() -> None:
    """upstreams.conf names compose's services on their port; edge.conf picks only those two
    upstreams, and the compose edge mounts both files and is the one published port."""
    upstreams = dict(
        re.findall(r"upstream\s+(\w+)\s*\{\s*server\s+([\w.:-]+);\s*\}", UPSTREAMS_CONF.read_text())
    )
    assert upstreams == {"studio_http": "web:8000", "studio_sockets": "sockets:8000"}
    edge = EDGE_CONF.read_text()
    routes = re.search(r"map \$http_upgrade \$studio_upstream \{(.*?)\}", edge, re.S)
    assert routes is not None
    assert re.findall(r"^\s*(\S+)\s+(\w+);$", routes.group(1), re.M) == [
        ("default", "studio_http"),
        ("~*^websocket$", "studio_sockets"),
    ]
    assert "proxy_pass http://$studio_upstream;" in edge
    services = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]
    assert services["web"]["command"] == services["sockets"]["command"]
    # Daphne on the configured event loop (studio/serve.py), as the tests start it.
    assert services["web"]["command"][:3] == ["python", "-m", "studio.serve"]
    assert [name for name, s in services.items() if s.get("ports")] == ["edge"]
    assert services["edge"]["ports"] == ["8000:8000"]
    mounts = {m.split(":")[1] for m in services["edge"]["volumes"]}
    assert mounts == {
        "/etc/nginx/nginx.conf",
        "/etc/nginx/conf.d/upstreams.conf",
        "/etc/nginx/conf.d/default.conf",
    }
    # The main configuration includes the two others and has room for many sockets (each
    # holds two connections); the test's and the bench's nginx run its worker settings.
    main = (ROOT / "docker" / "nginx" / "nginx.conf").read_text()
    assert "include /etc/nginx/conf.d/*.conf;" in main
    assert int(worker_settings()["worker_connections"]) >= 8192
    for pool in ("web", "sockets"):
        assert services["edge"]["depends_on"][pool]["condition"] == "service_healthy"
