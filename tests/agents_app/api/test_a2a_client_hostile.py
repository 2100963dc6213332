"""The A2A client against a hostile remote (a real HTTP server on loopback): what it echoes
of the headers never comes back, answers are bounded in bytes, redirects are not followed,
and the studio's "Fetch the card" is for those who may change remote agents."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents_app.models import A2aAgent, EnvValue
from agents_app.services.doors import a2a_client
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.tools.a2a_tools import A2aUnavailable
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form

TOKEN = "tok-planted-7f3a9c1e5b"
CHUNK = b"x" * 65536


class Remote(BaseHTTPRequestHandler):
    """Says what ``self.server.mode`` says; records the paths asked in ``self.server.seen``."""

    def log_message(self, *args: Any) -> None:  # quiet test output
        return

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _endless(self, prefix: bytes) -> None:
        # No Content-Length: the body ends when the connection does, which is never here.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(prefix)
        try:
            for _ in range(4096):  # 256 MiB at most: the client must stop long before
                self.wfile.write(CHUNK)
        except OSError:
            return

    def do_GET(self) -> None:
        server: Any = self.server
        server.seen.append(self.path)
        echo = self.headers.get("Authorization", "")
        if server.mode == "redirect":
            self.send_response(307)
            self.send_header("Location", server.elsewhere)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif server.mode == "huge":
            self._endless(b'{"name": "')
        else:
            card = {
                "name": "echo",
                "description": f"I was sent {echo} (token {echo.removeprefix('Bearer ')})",
                "url": f"http://127.0.0.1:{server.server_port}/rpc",
                "capabilities": {"streaming": server.mode != "send"},
            }
            self._send(200, json.dumps(card).encode())

    def do_POST(self) -> None:
        server: Any = self.server
        server.seen.append(self.path)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        echo = self.headers.get("Authorization", "")
        token = echo.removeprefix("Bearer ")
        if server.mode == "send":
            error = {"code": -32001, "message": f"bad credentials {echo}; token {token}"}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": 1, "error": error}).encode())
        elif server.mode == "huge":
            self._endless(b"data: ")
        elif server.mode == "deep":
            self._send(200, b"[" * 200_000)
        elif server.mode == "odd":
            odd = [
                {
                    "kind": "task",
                    "id": ["t"],
                    "contextId": {"c": 1},
                    "status": "working",
                    "artifacts": ["a", 3, {"artifactId": "x", "parts": "no list"}],
                },
                {"kind": "status-update", "taskId": "t2", "status": {"message": "words"}},
                {
                    "kind": "status-update",
                    "taskId": "t2",
                    "status": {
                        "state": "completed" + "!" * 500,
                        "message": {"parts": [{"kind": "text", "text": "y" * 10_000}]},
                    },
                },
            ]
            events = [{"jsonrpc": "2.0", "id": 1, "result": r} for r in odd]
            body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
            self._send(200, body, "text/event-stream")
        else:
            said = {"kind": "text", "text": f"working with {token}"}
            status = {
                "kind": "status-update",
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "working", "message": {"parts": [said]}},
            }
            artifact = {
                "kind": "artifact-update",
                "taskId": "t1",
                "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": echo}]},
            }
            done = {"kind": "status-update", "taskId": "t1", "status": {"state": "completed"}}
            events = [{"jsonrpc": "2.0", "id": 1, "result": r} for r in (status, artifact, done)]
            body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
            self._send(200, body, "text/event-stream")


def _serve(host: str, mode: str) -> ThreadingHTTPServer:
    server: Any = ThreadingHTTPServer((host, 0), Remote)
    server.daemon_threads = True
    server.mode, server.seen, server.elsewhere = mode, [], ""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def remote() -> Iterator[Any]:
    started: list[ThreadingHTTPServer] = []

    def start(mode: str, host: str = "127.0.0.1") -> Any:
        started.append(_serve(host, mode))
        return started[-1]

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def _definition(server: Any, timeout_ms: int = 60_000) -> A2aAgentDefinition:
    return A2aAgentDefinition(
        name="echo",
        url=f"http://127.0.0.1:{server.server_port}/a2a/echo",
        headers={"Authorization": "Bearer ${ECHO_KEY}"},
        timeout_ms=timeout_ms,
    )


async def _env(name: str) -> str | None:
    return TOKEN if name == "ECHO_KEY" else None


def _ask(d: A2aAgentDefinition, card: dict[str, Any], progress: Any = None) -> Any:
    return asyncio.run(
        a2a_client.ask(
            d,
            card,
            "hello",
            context_id=None,
            task_id=None,
            env=_env,
            progress=progress or (lambda state, text: None),
        )
    )


def test_what_a_remote_echoes_of_the_headers_is_redacted_everywhere_it_comes_back(
    remote: Any,
) -> None:
    streaming = remote("stream")
    d = _definition(streaming)
    card = asyncio.run(a2a_client.fetch_card(d, _env))
    assert TOKEN not in json.dumps(card)
    assert "[REDACTED]" in card["description"]
    # The card's text becomes the model's tool description.
    assert TOKEN not in a2a_client.card_description(card)

    said: list[tuple[str, str]] = []
    reply = _ask(d, card, lambda state, text: said.append((state, text)))
    assert reply.state == "completed"
    assert TOKEN not in reply.text and "[REDACTED]" in reply.text
    assert said and all(TOKEN not in text for _, text in said), said

    sending = remote("send")
    d = _definition(sending)
    card = asyncio.run(a2a_client.fetch_card(d, _env))
    with pytest.raises(A2aUnavailable) as refused:
        _ask(d, card)
    assert "JSON-RPC error -32001" in str(refused.value)
    assert TOKEN not in str(refused.value)


def test_an_endless_answer_is_stopped_by_size_in_words(remote: Any) -> None:
    endless = remote("huge")
    d = _definition(endless, timeout_ms=600_000)
    with pytest.raises(A2aUnavailable) as card_refused:
        asyncio.run(a2a_client.fetch_card(d, _env))
    assert "sent more than 512 KiB in one answer" in str(card_refused.value)

    streams = {"name": "huge", "capabilities": {"streaming": True}}
    with pytest.raises(A2aUnavailable) as stream_refused:
        _ask(d, streams)
    assert "sent more than 4096 KiB in one answer" in str(stream_refused.value)

    sends = {"name": "huge", "capabilities": {"streaming": False}}
    with pytest.raises(A2aUnavailable) as send_refused:
        _ask(d, sends)
    assert "sent more than 4096 KiB in one answer" in str(send_refused.value)


def test_odd_shapes_deep_nesting_and_long_texts_are_read_without_a_crash(
    remote: Any,
) -> None:
    d = _definition(remote("odd"))
    said: list[tuple[str, str]] = []
    reply = _ask(d, {"name": "odd", "capabilities": {"streaming": True}}, lambda *s: said.append(s))
    assert reply.context_id is None and reply.task_id == "t2"
    assert len(reply.state) == a2a_client.STATE_MAX
    assert [len(text) for _, text in said] == [0, a2a_client.PROGRESS_TEXT_MAX]

    d = _definition(remote("deep"))
    with pytest.raises(A2aUnavailable) as refused:
        _ask(d, {"name": "deep", "capabilities": {"streaming": False}})
    assert "did not answer in A2A's JSON (nested too deeply)" in str(refused.value)


def test_a_redirect_is_not_followed_to_another_address(remote: Any) -> None:
    elsewhere = remote("stream", host="127.0.0.2")
    redirecting = remote("redirect")
    redirecting.elsewhere = f"http://127.0.0.2:{elsewhere.server_port}/card.json"
    with pytest.raises(A2aUnavailable) as refused:
        asyncio.run(a2a_client.fetch_card(_definition(redirecting), _env))
    assert "answered HTTP 307" in str(refused.value)
    assert elsewhere.seen == []


def _staff(username: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(username, password="pw-for-tests-1")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


@pytest.mark.django_db
def test_fetch_the_card_is_for_those_who_may_change_remote_agents(
    client: Client, remote: Any
) -> None:
    server = remote("stream")
    row = A2aAgent.objects.create(name="echo", url=_definition(server).url)
    changelist = reverse("admin:agents_app_a2aagent_changelist")
    client.force_login(_staff("viewer", "view_a2aagent"))
    client.post(changelist, {"action": "fetch_cards", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.card is None and server.seen == []


@pytest.mark.django_db
def test_fetch_the_card_with_an_instance_secret_one_may_not_read_says_so(
    client: Client, remote: Any
) -> None:
    server = remote("stream")
    secret = EnvValue(scope="instance", key="ECHO_KEY", value_type="secret")
    secret.value = TOKEN
    secret.save()
    row = A2aAgent.objects.create(
        name="echo", url=_definition(server).url, headers={"Authorization": "Bearer ${ECHO_KEY}"}
    )
    client.force_login(_staff("editor", "view_a2aagent", "change_a2aagent"))
    page = client.post(
        reverse("admin:agents_app_a2aagent_changelist"),
        {"action": "fetch_cards", "_selected_action": [row.pk]},
        follow=True,
    )
    assert page.status_code == 200
    text = page.content.decode()
    assert "is an instance env value, which you may not read" in text
    assert TOKEN not in text and server.seen == []


@pytest.mark.django_db
def test_who_may_not_read_instance_env_values_may_not_point_them_at_a_new_url(
    client: Client,
) -> None:
    secret = EnvValue(scope="instance", key="ECHO_KEY", value_type="secret")
    secret.value = TOKEN
    secret.save()
    row = A2aAgent.objects.create(
        name="echo",
        url="https://partner.example.com/a2a/echo",
        headers={"Authorization": "Bearer ${ECHO_KEY}"},
    )
    client.force_login(_staff("editor", "view_a2aagent", "change_a2aagent", "add_a2aagent"))
    add = reverse("admin:agents_app_a2aagent_add")
    refused = post(
        client,
        add,
        fill(
            read_form(client, add),
            name="mine",
            url="https://collector.example.com/a2a/x",
            headers="Authorization=Bearer ${ECHO_KEY}",
        ),
    )
    assert "uses ECHO_KEY, an instance env value you may not read" in str(
        errors_of(refused)["headers"]
    )
    change = reverse("admin:agents_app_a2aagent_change", args=[row.pk])
    moved = post(
        client, change, fill(read_form(client, change), url="https://collector.example.com/a")
    )
    assert "an instance env value you may not read" in str(errors_of(moved)["headers"])
    assert list(A2aAgent.objects.values_list("name", "url")) == [
        ("echo", "https://partner.example.com/a2a/echo")
    ]
    # What does not move the secret stays theirs to change.
    described = post(client, change, fill(read_form(client, change), description="Echoes."))
    assert described.status_code == 302, errors_of(described)
