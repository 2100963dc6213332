"""Spec 0.2.0 row F6, credential grants: a person lends a credential to agent code without
the code ever holding it. The secret is write-only (no route, log record, tool result or
frame carries it); ``fetch(grant, url)`` injects it for the callers ``allow`` names, only to
the grant's origins, through the egress policy. A real local HTTP server receives what was
injected; tools reach the grant as ``state.fetch`` in a real session."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from agents_app.base.code_registry import reset_registry
from agents_app.broadcast.events import thread_group
from agents_app.models import CredentialGrant, Log, Message
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.users import grants
from runtime.core import egress
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.test_api_sessions import _active_session, _post
from tests.agents_app.services.test_egress import Listener

PLANTED = "sk_live_PLANTED_grant_secret_4242"


@pytest.fixture
def server() -> Iterator[Listener]:
    listener = Listener(status=200)
    yield listener
    listener.close()


def _origin(server: Listener) -> str:
    return f"http://127.0.0.1:{server.port}"


def _grant(server: Listener, **over: Any) -> dict[str, Any]:
    return {
        "kind": "bearer",
        "secret": PLANTED,
        "origins": [_origin(server)],
        "allow": {"tools": ["crm_lookup"]},
        "metadata": {"label": "CRM"},
        **over,
    }


def _put(client: Any, path: str, body: dict[str, Any]) -> Any:
    return client.put(path, json.dumps(body), content_type="application/json")


# --- the routes: write-only --------------------------------------------------------------


@pytest.mark.django_db
def test_F6_the_secret_never_leaves_through_any_route(
    as_: Any, alice: Any, ops: Any, server: Listener, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    answers = []
    answers.append(_put(as_(alice), "/api/users/me/grants/crm", _grant(server)))
    assert answers[-1].status_code == 200, answers[-1].content
    answers.append(as_(alice).get("/api/users/me/grants"))
    answers.append(as_(ops).get(f"/api/users/{alice.pk}/grants"))
    # An update that only changes who may use it keeps the stored secret.
    keep = _grant(server, allow={"tools": ["crm_lookup", "other"]})
    del keep["secret"]
    answers.append(_put(as_(alice), "/api/users/me/grants/crm", keep))
    answers.append(_put(as_(ops), "/api/grants/shared", _grant(server)))
    answers.append(as_(ops).get("/api/grants"))
    for answer in answers:
        assert answer.status_code == 200, answer.content
        assert PLANTED not in answer.content.decode()
    [listed] = answers[1].json()["grants"]
    assert listed["name"] == "crm" and listed["kind"] == "bearer" and listed["scope"] == "user"
    assert listed["origins"] == [_origin(server)] and listed["metadata"] == {"label": "CRM"}
    assert answers[3].json()["grant"]["allow"]["tools"] == ["crm_lookup", "other"]
    # Stored encrypted, never in clear.
    row = CredentialGrant.objects.get(user=alice, name="crm")
    assert PLANTED not in row.ciphertext and PLANTED not in json.dumps(row.config)
    assert PLANTED not in caplog.text
    deleted = as_(alice).delete("/api/users/me/grants/crm")
    assert deleted.status_code == 200 and not CredentialGrant.objects.filter(user=alice).exists()
    assert as_(alice).delete("/api/users/me/grants/crm").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"colour": "blue"}, "colour: Extra inputs are not permitted"),
        ({"kind": "cookie"}, "kind: 'cookie' is not one of bearer, header, query, basic"),
        ({"inject": {"param": "key"}}, "inject: param is not a setting of a bearer grant"),
        ({"kind": "header", "inject": {}}, "inject: a header grant needs header"),
        ({"origins": ["https://api.example.com/v1"]}, "has a path"),
        ({"origins": ["ftp://api.example.com"]}, "is not an origin"),
        ({"allow": {"tools": ["x"], "robots": ["y"]}}, "allow.robots: Extra inputs"),
        ({"origins": ["http://10.1.2.3"]}, "the egress policy does not allow http://10.1.2.3"),
        ({"allow": {"agents": ["helper"]}}, "allow.agents: no caller asks for a grant as an agent"),
    ],
    ids=[
        "unknown-field",
        "kind",
        "inject-key",
        "inject-missing",
        "path",
        "scheme",
        "allow",
        "egress",
        "agents",
    ],
)
def test_F6_settings_it_would_ignore_are_refused_with_a_sentence(
    as_: Any, alice: Any, server: Listener, change: dict[str, Any], words: str
) -> None:
    answer = _put(as_(alice), "/api/users/me/grants/crm", _grant(server, **change))
    assert answer.status_code == 400, answer.content
    assert words in answer.json()["error"]
    assert not CredentialGrant.objects.exists()


@pytest.mark.django_db
def test_F6_pointing_a_grant_elsewhere_needs_the_secret_again(
    as_: Any, alice: Any, server: Listener
) -> None:
    """Whoever can change a grant without knowing the secret (a leaked API key) must not be
    able to send it to a host of their own."""
    assert _put(as_(alice), "/api/users/me/grants/crm", _grant(server)).status_code == 200
    moved = _grant(server, origins=["https://attacker.example"])
    del moved["secret"]
    answer = _put(as_(alice), "/api/users/me/grants/crm", moved)
    assert answer.status_code == 400
    assert "needs its secret again" in answer.json()["error"]
    row = CredentialGrant.objects.get(user=alice, name="crm")
    assert row.config["origins"] == [_origin(server)]


@pytest.mark.django_db
def test_F6_admin_grant_routes_need_their_permission(
    as_: Any, alice: Any, bob: Any, server: Listener
) -> None:
    assert as_(bob).get(f"/api/users/{alice.pk}/grants").status_code == 403
    refused = _put(as_(bob), f"/api/users/{alice.pk}/grants/crm", _grant(server))
    assert refused.status_code == 403
    assert not CredentialGrant.objects.exists()


# --- grant_fetch: who, where, and the egress policy ---------------------------------------


def _save(user: Any, server: Listener, **over: Any) -> None:
    body = _grant(server, **over)
    grants.grant_put(
        user_id=user.pk if user else None,
        name=body.pop("name", "crm"),
        kind=body.pop("kind"),
        secret=body.pop("secret"),
        settings=body,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
@pytest.mark.parametrize(
    ("kind", "inject", "where", "expected"),
    [
        ("bearer", {}, "authorization", f"Bearer {PLANTED}"),
        ("header", {"header": "X-Api-Key", "prefix": "Key "}, "x-api-key", f"Key {PLANTED}"),
        ("query", {"param": "api_key"}, "path", f"/v1/items?page=2&api_key={PLANTED}"),
        (
            "basic",
            {"username": "svc"},
            "authorization",
            "Basic " + base64.b64encode(f"svc:{PLANTED}".encode()).decode(),
        ),
    ],
)
async def test_F6_grant_fetch_injects_the_secret_for_an_allowed_caller(
    alice: Any,
    server: Listener,
    kind: str,
    inject: dict[str, str],
    where: str,
    expected: str,
    caplog: Any,
) -> None:
    caplog.set_level(logging.DEBUG)  # httpx logs each request's URL at INFO
    await sync_to_async(_save)(alice, server, kind=kind, inject=inject)
    response = await grants.grant_fetch(
        alice.pk,
        "crm",
        ("tools", "crm_lookup"),
        "GET",
        f"{_origin(server)}/v1/items?page=2",
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200
    [(path, headers)] = server.received
    assert (path if where == "path" else headers[where]) == expected
    assert headers["accept"] == "application/json"
    # What the caller gets back shows its own request, not the one carrying the secret.
    assert PLANTED not in repr(dict(response.request.headers)) + str(response.request.url)
    assert PLANTED not in str(response.url)
    assert "HTTP Request: GET" in caplog.text and PLANTED not in caplog.text


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_F6_refusals_in_words_and_nothing_sent(alice: Any, server: Listener) -> None:
    await sync_to_async(_save)(alice, server)
    await sync_to_async(_save)(alice, server, name="closed", allow=None)
    url = f"{_origin(server)}/v1/items"
    cases = [
        ("crm", ("tools", "search_web"), url, "does not allow the tool 'search_web'"),
        ("crm", ("endpoints", "crm_lookup"), url, "does not allow the endpoint 'crm_lookup'"),
        ("closed", ("tools", "crm_lookup"), url, "does not allow the tool 'crm_lookup'"),
        ("crm", ("tools", "crm_lookup"), "http://127.0.0.2:9/x", "is not for http://127.0.0.2:9"),
        ("nope", ("tools", "crm_lookup"), url, "No credential grant named 'nope'"),
    ]
    for name, caller, target, words in cases:
        with pytest.raises(grants.GrantRefused) as refused:
            await grants.grant_fetch(alice.pk, name, caller, "GET", target)
        assert words in refused.value.message
        assert PLANTED not in refused.value.message
    # The egress policy: the operator no longer allows loopback.
    egress.configure([])
    with pytest.raises(grants.GrantRefused) as refused:
        await grants.grant_fetch(alice.pk, "crm", ("tools", "crm_lookup"), "GET", url)
    assert "egress policy does not allow" in refused.value.message
    assert PLANTED not in refused.value.message
    assert server.received == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_F6_an_instance_grant_serves_when_the_owner_has_none(
    alice: Any, bob: Any, server: Listener
) -> None:
    await sync_to_async(_save)(None, server, name="shared")
    await sync_to_async(_save)(bob, server, name="shared", secret="bobs-own-secret-000")
    for user, secret in ((alice, PLANTED), (bob, "bobs-own-secret-000")):
        await grants.grant_fetch(
            user.pk, "shared", ("tools", "crm_lookup"), "GET", f"{_origin(server)}/x"
        )
        assert server.received[-1][1]["authorization"] == f"Bearer {secret}"


# --- tools: state.fetch in a real session -------------------------------------------------


@define_tool("Looks a customer up in the CRM with the person's grant.")
async def crm_lookup(state: Any) -> str:
    response = await state.fetch("crm", f"{ORIGIN[0]}/customers/7", headers={"Accept": "x"})
    return f"status {response.status_code}; sent {dict(response.request.headers)}"


@define_tool("A tool the grant does not name.")
async def rogue_tool(state: Any) -> str:
    try:
        await state.fetch("crm", f"{ORIGIN[0]}/customers/7")
    except PermissionError as refused:
        return f"refused: {refused}"
    return "sent"


ORIGIN: list[str] = [""]


@pytest.fixture
def _tools(server: Listener) -> Iterator[None]:
    ORIGIN[0] = _origin(server)
    reset_registry(Registry(crm_lookup, rogue_tool))
    yield
    reset_registry(None)


def _thread(user: Any) -> Any:
    script = [
        {"tool_calls": [{"name": "crm_lookup", "arguments": {}}]},
        {"tool_calls": [{"name": "rogue_tool", "arguments": {}}]},
        {"content": "Done."},
    ]
    tools = ["crm_lookup", "rogue_tool"]
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s", script=script)),
            ("prompt", PromptDefinition(name="p", model="m", prompt="x", tools=tools)),
            ("agent", AgentDefinition(name="crm", side_a=SideConfig(prompt="p"))),
        ],
        strict_code_names=False,
    )
    return thread_create(user=user, agent_name="crm")


async def _drain(channel: str) -> list[Any]:
    layer = get_channel_layer()
    got = []
    while True:
        try:
            got.append(await asyncio.wait_for(layer.receive(channel), 0.5))
        except TimeoutError:
            return got


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections", "_tools")
async def test_F6_a_tool_uses_the_grant_through_state_fetch_and_never_sees_it(
    alice: Any, server: Listener, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    await sync_to_async(_save)(alice, server)
    thread = await sync_to_async(_thread)(alice)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(thread_group(str(thread.pk)), channel)
    await _post(thread, "look up customer 7")
    await asyncio.wait_for(run_session_job(await _active_session(thread)), 30)

    # The server got the credential, once: the allowed tool's request.
    [(path, headers)] = server.received
    assert path == "/customers/7" and headers["authorization"] == f"Bearer {PLANTED}"
    results = await sync_to_async(
        lambda: list(
            Message.objects.filter(thread=thread, role="tool")
            .order_by("created_at")
            .values_list("content", flat=True)
        )
    )()
    assert results[0].startswith("status 200; sent {") and "'accept': 'x'" in results[0]
    assert results[1] == (
        "refused: The credential grant 'crm' does not allow the tool 'rogue_tool' to use it "
        "(its allow.tools must name it)."
    )
    # Nowhere else either: stored rows, logs, frames, log records.
    stored = await sync_to_async(
        lambda: json.dumps(
            [
                list(Message.objects.filter(thread=thread).values()),
                list(Log.objects.filter(thread=thread).values()),
            ],
            default=str,
        )
    )()
    frames = json.dumps(await _drain(channel), default=str)
    assert "status 200" in stored and "rogue_tool" in frames
    for seen in (stored, frames, caplog.text, "".join(results)):
        assert PLANTED not in seen


@pytest.mark.django_db
def test_F6_key_rotation_moves_grant_secrets_too(alice: Any, server: Listener) -> None:
    import os

    from django.core.management import call_command
    from django.test import override_settings

    from agents_app.base.encryption import decrypt, key_id_of

    old = "old:" + base64.urlsafe_b64encode(os.urandom(32)).decode()
    new = "new:" + base64.urlsafe_b64encode(os.urandom(32)).decode()
    with override_settings(STUDIO_ENCRYPTION_KEYS=old):
        _save(alice, server)
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"{new},{old}"):
        call_command("reencrypt_env", stdout=io.StringIO())
    with override_settings(STUDIO_ENCRYPTION_KEYS=new):
        row = CredentialGrant.objects.get(user=alice)
        assert key_id_of(row.ciphertext) == "new" and decrypt(row.ciphertext) == PLANTED


# --- thread endpoints: state.fetch as ("endpoints", name) ---------------------------------


async def _crm_page(request: Any, state: Any, params: dict[str, str]) -> dict[str, Any]:
    try:
        response = await state.fetch("crm", f"{ORIGIN[0]}/page")
    except PermissionError as refused:
        return {"refused": str(refused)}
    return {"status": response.status_code}


@pytest.mark.django_db
def test_F6_a_thread_endpoint_asks_as_itself(
    as_: Any, alice: Any, server: Listener, thread_of: Any
) -> None:
    from runtime.tools.registry import define_thread_endpoint

    ORIGIN[0] = _origin(server)
    reset_registry(Registry(define_thread_endpoint(_crm_page, route="/crm", name="crm_page")))
    try:
        thread = thread_of(alice)
        _save(alice, server)  # allow.tools only
        refused = as_(alice).get(f"/api/threads/{thread.pk}/crm").json()
        assert "does not allow the endpoint 'crm_page'" in refused["refused"]
        assert server.received == []
        _save(alice, server, allow={"endpoints": ["crm_page"]})
        assert as_(alice).get(f"/api/threads/{thread.pk}/crm").json() == {"status": 200}
        assert server.received[-1][1]["authorization"] == f"Bearer {PLANTED}"
    finally:
        reset_registry(None)


class _Echo:
    """A server that quotes the request back, gzip-compressed, as debugging endpoints and
    some error pages do: path, headers, and the Authorization header in a response header."""

    def __init__(self) -> None:
        import gzip
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                quoted = json.dumps({"path": self.path, "headers": dict(self.headers.items())})
                body = gzip.compress(quoted.encode())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("X-Seen-Authorization", self.headers.get("Authorization", ""))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
@pytest.mark.parametrize(
    ("kind", "inject"),
    [
        ("bearer", {}),
        ("query", {"param": "api_key"}),
        ("basic", {"username": "svc"}),
    ],
)
async def test_F6_a_server_that_echoes_the_credential_hands_back_no_secret(
    alice: Any, kind: str, inject: dict[str, str]
) -> None:
    echo = _Echo()
    try:
        origin = f"http://127.0.0.1:{echo.port}"
        settings = {"origins": [origin], "allow": {"tools": ["crm_lookup"]}}
        await sync_to_async(grants.grant_put)(
            user_id=alice.pk,
            name="crm",
            kind=kind,
            secret=PLANTED,
            settings={**settings, **({"inject": inject} if inject else {})},
        )
        response = await grants.grant_fetch(
            alice.pk, "crm", ("tools", "crm_lookup"), "GET", f"{origin}/echo"
        )
    finally:
        echo.close()
    quoted = response.json()  # decoded once: the gzip header is not handed on
    assert quoted["path"].startswith("/echo")
    assert "[REDACTED]" in response.text  # the server did quote it back
    token = base64.b64encode(f"svc:{PLANTED}".encode()).decode()
    for shown in (response.text, repr(response.headers.raw)):
        assert PLANTED not in shown and token not in shown, shown
