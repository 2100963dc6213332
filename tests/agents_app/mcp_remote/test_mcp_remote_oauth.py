"""Remote MCP servers with ``auth: oauth`` (issue #57): each person connects their own account
in the browser, and an agent's tool call uses the thread owner's token.

The remote server is the platform's own ``/mcp`` behind its own authorization server
(``/oauth/*``), served over a real socket by ``door_server`` (the same live server acting as
both): the studio's Connect discovers the protected-resource and authorization-server
metadata, registers a client, sends the browser to the consent page with PKCE S256, and its
callback exchanges the code. Then a session of a caller agent calls ``mcp:remote/oracle``,
which reaches ``/mcp`` with the person's token and runs the oracle agent as that person.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.conf import settings
from django.test import Client as DjangoClient

from agents_app.base.encryption import decrypt
from agents_app.models import (
    Agent,
    McpOAuthGrant,
    McpServer,
    Message,
    OAuthClient,
    OAuthToken,
    Thread,
    ThreadSession,
)
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.access.mcp_tokens import access_token_for
from agents_app.services.definitions.mcp_servers import mcp_server_save
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.mcp.servers import McpServerDefinition, parse_server, wire_name
from tests.agents_app.api.api_support import define_agent, scripted_model
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

QUESTION = "What is the answer?"
ANSWER = "The answer is 42."


def _define(server: str) -> McpServer:
    define_agent("oracle", [{"content": ANSWER, "expectInput": {"containsMessage": QUESTION}}])
    Agent.objects.filter(name="oracle").update(expose_as_tool=True)
    row = McpServer.objects.create(
        name="remote",
        url=f"{server}/mcp",
        auth="oauth",
        tools=[
            {
                "name": "oracle",
                "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
            }
        ],
    )
    call = {"name": wire_name("remote", "oracle"), "arguments": {"message": QUESTION}, "id": "c1"}
    model = scripted_model(
        "caller-model", [{"toolCalls": [call], "finishReason": "tool_calls"}, {"content": "ok"}]
    )
    prompt = PromptDefinition(
        name="caller-prompt", model=model.name, prompt="Ask.", tools=["mcp:remote/oracle"]
    )
    agent = AgentDefinition(name="caller", side_a=SideConfig(prompt=prompt.name))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )
    return row


class Browser:
    """A person's browser, signed in (a session cookie): it follows the studio's Connect to the
    consent page, posts the form as a page without JavaScript is used, and follows the
    redirect back to the studio's callback."""

    def __init__(self, server: str, user: Any) -> None:
        django = DjangoClient()
        django.force_login(user)
        cookie = django.cookies[settings.SESSION_COOKIE_NAME].value
        self.http = httpx.Client(
            base_url=server, cookies={settings.SESSION_COOKIE_NAME: cookie}, timeout=30
        )
        self.server = server
        self.pages: list[httpx.Response] = []

    def connect(self, row: McpServer, decision: str = "allow") -> httpx.Response:
        start = self.http.get(f"/mcp-servers/{row.pk}/connect")
        assert start.status_code == 302, start.text
        authorize = start.headers["location"]
        query = parse_qs(urlsplit(authorize).query)
        assert authorize.startswith(f"{self.server}/oauth/authorize?")
        assert query["code_challenge_method"] == ["S256"]
        assert query["resource"] == [f"{self.server}/mcp"]
        assert query["redirect_uri"] == [f"{self.server}/mcp-servers/callback"]
        consent = self.http.get(authorize)
        self.pages.append(consent)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', consent.text)
        assert token is not None, consent.text
        answer = self.http.post(
            authorize, data={"csrfmiddlewaretoken": token.group(1), "decision": decision}
        )
        assert answer.status_code == 302, answer.text
        back = answer.headers["location"]
        assert back.startswith(f"{self.server}/mcp-servers/callback?")
        landed = self.http.get(back)
        self.pages.append(landed)
        return landed


def _ask(user: Any) -> Message:
    """A session of the caller agent in ``user``'s thread, run to its end; its tool message.

    To its end, not only to the tool message: a session still committing when the test's
    teardown flushes the tables deadlocks with the flush (a CI run read "deadlock detected
    while deleting tuple in agents_app_thread", and the next test found the last one's rows)."""
    thread = thread_create(user=user, agent_name="caller")
    message_service.message_post(thread=thread, role="user", content="go")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = Message.objects.filter(thread=thread, role="tool").first()
        open_sessions = ThreadSession.objects.filter(
            thread=thread, status__in=(ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING)
        )
        if found is not None and not open_sessions.exists():
            return found
        time.sleep(0.1)
    raise AssertionError("the tool call's session did not finish")


def test_a_person_connects_once_and_the_tool_call_uses_their_token(
    server: str, alice: Any, bob: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    row = _define(server)
    # Before connecting, the tool result says in words where to connect; no stack trace.
    before = _ask(alice)
    assert before.tool_status == "error"
    assert "needs your own account" in before.content
    assert f"/mcp-servers/{row.pk}/connect" in before.content
    assert "Traceback" not in before.content

    browser = Browser(server, alice)
    landed = browser.connect(row)
    assert landed.status_code == 200 and "Connected to remote" in landed.text
    client = OAuthClient.objects.get()
    assert client.client_name == "Agent studio"  # dynamically registered
    # Stored encrypted: the access token the authorization server issued for alice is in
    # the grant only once decrypted.
    grant = McpOAuthGrant.objects.get(user=alice, server=row)
    issued = OAuthToken.objects.get(user=alice)
    raw = access_token_for(row, alice)
    assert issued.access_token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in grant.sealed and raw in decrypt(grant.sealed)

    done = _ask(alice)
    assert done.tool_status == "success", done.content
    assert ANSWER in done.content
    # The remote call ran as alice (the oracle's thread is hers).
    assert Thread.objects.filter(owner=alice, agent__name="oracle").exists()

    # Bob has not connected: alice's token is not his to use.
    other = _ask(bob)
    assert other.tool_status == "error" and "needs your own account" in other.content
    assert not Thread.objects.filter(owner=bob, agent__name="oracle").exists()

    # The planted token is in no log line, page, frame or message.
    seen = [r.getMessage() for r in caplog.records] + [p.text for p in browser.pages]
    seen += list(Message.objects.values_list("content", flat=True))
    listing = browser.http.get("/mcp-servers/connections")
    assert "remote" in listing.text and "Disconnect" in listing.text
    seen.append(listing.text)
    staff = DjangoClient()
    staff.force_login(type(alice).objects.create_superuser("root", password="pw-root-1"))
    page = staff.get(f"/admin/agents_app/mcpoauthgrant/{grant.pk}/change/")
    assert page.status_code == 200 and "alice" in page.content.decode()
    seen.append(page.content.decode())
    assert len(seen) > 5 and not [s for s in seen if s and raw in s]


def test_an_expired_token_is_refreshed_and_a_disconnect_revokes_it(server: str, alice: Any) -> None:
    row = _define(server)
    browser = Browser(server, alice)
    browser.connect(row)
    first = access_token_for(row, alice)
    McpOAuthGrant.objects.filter(user=alice).update(expires_at="2000-01-01T00:00Z")
    second = access_token_for(row, alice)
    assert second != first
    assert _ask(alice).tool_status == "success"
    # The person disconnects on their page: the grant is gone and the authorization server
    # revoked the tokens (RFC 7009).
    page = browser.http.get("/mcp-servers/connections")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf is not None
    gone = browser.http.post(
        "/mcp-servers/connections",
        data={"csrfmiddlewaretoken": csrf.group(1), "disconnect": str(row.pk)},
    )
    assert gone.status_code == 302
    assert not McpOAuthGrant.objects.exists()
    assert not OAuthToken.objects.filter(revoked_at__isnull=True).exists()
    assert "needs your own account" in _ask(alice).content


def test_a_server_moved_to_another_address_never_gets_the_token(server: str, alice: Any) -> None:
    row = _define(server)
    Browser(server, alice).connect(row)
    McpServer.objects.filter(pk=row.pk).update(url="http://127.0.0.1:9/elsewhere/mcp")
    moved = _ask(alice)
    assert moved.tool_status == "error"
    assert "moved to another address since you connected" in moved.content
    assert "Connect" in moved.content or "/connect" in moved.content
    assert not McpOAuthGrant.objects.exists()


def test_staff_revoke_a_persons_connection(server: str, alice: Any) -> None:
    row = _define(server)
    Browser(server, alice).connect(row)
    grant = McpOAuthGrant.objects.get()
    staff = DjangoClient()
    staff.force_login(type(alice).objects.create_superuser("root", password="pw-root-1"))
    answer = staff.post(f"/admin/agents_app/mcpoauthgrant/{grant.pk}/delete/", {"post": "yes"})
    assert answer.status_code == 302
    assert not McpOAuthGrant.objects.exists()
    assert not OAuthToken.objects.filter(revoked_at__isnull=True).exists()


def test_denied_consent_stores_nothing(server: str, alice: Any) -> None:
    row = _define(server)
    landed = Browser(server, alice).connect(row, decision="deny")
    assert landed.status_code == 400 and "Not connected" in landed.text
    assert not McpOAuthGrant.objects.exists()


def test_a_callback_with_another_state_is_refused(server: str, alice: Any) -> None:
    row = _define(server)
    browser = Browser(server, alice)
    start = browser.http.get(f"/mcp-servers/{row.pk}/connect")
    assert start.status_code == 302
    forged = browser.http.get("/mcp-servers/callback?code=abc&state=not-the-one")
    assert forged.status_code == 400 and "state" in forged.text
    assert not McpOAuthGrant.objects.exists()


def test_unknown_auth_modes_and_oauth_misuse_are_refused_at_save(ops: Any) -> None:
    _, errors = parse_server({"name": "x", "url": "https://x.example/mcp", "auth": "magic"})
    assert errors and errors[0].path == "auth"
    for definition, words in [
        (
            McpServerDefinition(
                name="x",
                url="https://x.example/mcp",
                auth="oauth",
                headers={"Authorization": "Bearer ${T}"},
            ),
            "Authorization header carries the person's token",
        ),
        (
            McpServerDefinition(
                name="x",
                url="https://x.example/mcp",
                auth="oauth",
                oauth_client_id="c",
                oauth_client_secret="s3cret",
            ),
            "Write the client secret as ${NAME}",
        ),
        (
            McpServerDefinition(name="x", url="https://x.example/mcp", oauth_client_id="c"),
            "need auth: oauth",
        ),
    ]:
        with pytest.raises(Exception, match=re.escape(words)):
            mcp_server_save(definition=definition, actor=ops)
