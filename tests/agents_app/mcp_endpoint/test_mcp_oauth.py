"""``/mcp`` as an OAuth-protected resource (issue #57): the ``mcp`` SDK 2.x's own OAuth client
provider goes through the whole flow against the production composition over a real socket
(``door_server``): a 401 naming the protected-resource metadata (RFC 9728), the
authorization server's metadata (RFC 8414), dynamic registration (RFC 7591), the consent page
(signed in as a browser would be, its form posted without JavaScript), the code exchanged with
PKCE (S256), then ``tools/list`` and a tool call of an agent. And: a revoked token (RFC 7009 or
the studio's Revoke) is refused, a token reaches only what its person may reach, PKCE that is
missing or wrong is refused, and tokens are stored only as hashes.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)
from mcp.shared.auth import OAuthToken as SdkToken

from agents_app.models import Agent, OAuthClient, OAuthToken, Thread
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

QUESTION = "What is the answer?"
ANSWER = "The answer is 42."
REDIRECT = "http://127.0.0.1:9/callback"


def _oracle(name: str = "oracle") -> None:
    define_agent(name, [{"content": ANSWER, "expectInput": {"containsMessage": QUESTION}}])
    Agent.objects.filter(name=name).update(expose_as_tool=True)


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: SdkToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> SdkToken | None:
        return self.tokens

    async def set_tokens(self, tokens: SdkToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """A person's browser: signed in to the studio (a session cookie), it opens the consent
    page and posts its form, as a page without JavaScript is used. (Synchronous: the server
    runs on its own thread, and one browser serves several event loops.)"""

    def __init__(self, server: str, user: Any, decision: str = "allow") -> None:
        django = DjangoClient()
        django.force_login(user)
        cookie = django.cookies[settings.SESSION_COOKIE_NAME].value
        self.http = httpx.Client(
            base_url=server, cookies={settings.SESSION_COOKIE_NAME: cookie}, timeout=30
        )
        self.decision = decision
        self.pages: list[httpx.Response] = []
        self.landed: str | None = None

    async def open(self, url: str) -> None:
        page = self.http.get(url)
        self.pages.append(page)
        assert page.status_code == 200, page.text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None, page.text
        answer = self.http.post(
            url, data={"csrfmiddlewaretoken": token.group(1), "decision": self.decision}
        )
        assert answer.status_code == 302, answer.text
        self.landed = answer.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        assert self.landed is not None and self.landed.startswith(REDIRECT + "?")
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.landed).query).items()}
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )


def _metadata() -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="Test MCP client",
        redirect_uris=[REDIRECT],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


async def _sdk_session(server: str, browser: Browser, storage: Memory, work: Any) -> Any:
    provider = OAuthClientProvider(
        server_url=f"{server}/mcp",
        client_metadata=_metadata(),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client,
    ):
        return await work(client)


async def _list_and_ask(client: Client) -> tuple[list[str], Any]:
    names = [t.name for t in (await client.list_tools()).tools]
    return names, await client.call_tool("oracle", {"message": QUESTION})


def test_the_sdk_client_connects_through_the_whole_oauth_flow(server: str, alice: Any) -> None:
    _oracle()
    storage, browser = Memory(), Browser(server, alice)
    names, result = asyncio.run(_sdk_session(server, browser, storage, _list_and_ask))
    assert names == ["oracle"]
    assert not result.is_error, result.content
    assert result.content[0].text == ANSWER
    # The person was asked, on a page that needs no script and allows its answer to go to the
    # client's redirect URI only; the thread is theirs.
    [consent] = browser.pages
    assert "Connect Test MCP client?" in consent.text and "<script" not in consent.text
    policy = consent.headers["content-security-policy"]
    assert "form-action 'self' http://127.0.0.1:9" in policy
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
    assert Thread.objects.filter(owner=alice, agent__name="oracle").count() == 1
    # Registered, consented, stored as hashes only.
    client = OAuthClient.objects.get()
    assert client.client_name == "Test MCP client" and client.client_secret_hash == ""
    token = OAuthToken.objects.get()
    assert token.user == alice and token.scope == "mcp" and token.revoked_at is None
    assert storage.tokens is not None and storage.tokens.refresh_token
    raw = storage.tokens.access_token
    assert token.access_token_hash == hashlib.sha256(raw.encode()).hexdigest()
    stored = {str(v) for v in OAuthToken.objects.values().get().values()}
    assert raw not in stored and storage.tokens.refresh_token not in stored


def test_401_names_the_metadata_and_the_metadata_names_the_server(server: str) -> None:
    denied = httpx.post(f"{server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert denied.status_code == 401
    challenge = denied.headers["www-authenticate"]
    prm_url = f"{server}/.well-known/oauth-protected-resource/mcp"
    assert challenge == f'Bearer resource_metadata="{prm_url}", scope="mcp"'
    assert "API key" in denied.json()["error"]
    prm = httpx.get(prm_url).json()
    assert prm["resource"] == f"{server}/mcp"
    assert prm["authorization_servers"] == [server] and prm["scopes_supported"] == ["mcp"]
    assert httpx.get(f"{server}/.well-known/oauth-protected-resource").json() == prm
    asm = httpx.get(f"{server}/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == server
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["revocation_endpoint"] == f"{server}/oauth/revoke"
    assert asm["registration_endpoint"] == f"{server}/oauth/register"
    bad = httpx.post(
        f"{server}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer agtmcp_not-a-token"},
    )
    assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["www-authenticate"]


# --- a token by hand: registration, consent, exchange --------------------------------------


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _register(server: str, **extra: Any) -> httpx.Response:
    body = {
        "client_name": "By hand",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **extra,
    }
    return httpx.post(f"{server}/oauth/register", json=body)


def _authorize_url(server: str, client_id: str, **params: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "s1",
        "scope": "mcp",
        **params,
    }
    return f"{server}/oauth/authorize?{urlencode({k: v for k, v in query.items() if v})}"


def _code(server: str, user: Any, client_id: str, challenge: str) -> str:
    browser = Browser(server, user)
    url = _authorize_url(server, client_id, code_challenge=challenge, code_challenge_method="S256")
    asyncio.run(browser.open(url))
    return asyncio.run(browser.callback()).code


def _exchange(server: str, client_id: str, code: str, verifier: str | None) -> httpx.Response:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
    }
    if verifier is not None:
        form["code_verifier"] = verifier
    return httpx.post(f"{server}/oauth/token", data=form)


def _token(server: str, user: Any) -> tuple[str, str]:
    """A fresh client's access token for ``user`` (and the client id)."""
    client_id = _register(server).json()["client_id"]
    verifier, challenge = _pkce()
    answer = _exchange(server, client_id, _code(server, user, client_id, challenge), verifier)
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"], client_id


def _mcp(server: str, token: str, method: str, params: dict[str, Any] | None = None) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    return httpx.post(f"{server}/mcp", json=body, headers=headers, timeout=30)


def _answer(response: httpx.Response) -> dict[str, Any]:

    data = [ln[5:] for ln in response.text.splitlines() if ln.startswith("data:")]
    return dict(json.loads(data[-1])) if data else dict(response.json())


def test_a_token_revoked_at_the_revocation_endpoint_gets_401(server: str, alice: Any) -> None:
    _oracle()
    token, client_id = _token(server, alice)
    assert _mcp(server, token, "tools/list").status_code == 200
    revoked = httpx.post(f"{server}/oauth/revoke", data={"token": token, "client_id": client_id})
    assert revoked.status_code == 200, revoked.text
    again = _mcp(server, token, "tools/list")
    assert again.status_code == 401
    assert OAuthToken.objects.get().revoked_at is not None


def test_a_connection_revoked_in_the_studio_gets_401(server: str, make_user: Any) -> None:
    _oracle()
    dana = make_user("dana", staff=True)
    token, _ = _token(server, dana)
    assert _mcp(server, token, "tools/list").status_code == 200
    studio = DjangoClient()
    studio.force_login(dana)
    listing = studio.get("/admin/agents_app/oauthtoken/")
    assert listing.status_code == 200 and "By hand" in listing.content.decode()
    row = OAuthToken.objects.get()
    done = studio.post(
        "/admin/agents_app/oauthtoken/",
        {"action": "revoke", "_selected_action": [row.pk]},
        follow=True,
    )
    assert "Revoked 1 connection(s)." in done.content.decode()
    assert _mcp(server, token, "tools/list").status_code == 401


def test_a_token_reaches_only_what_its_person_may_reach(server: str, alice: Any, bob: Any) -> None:
    _oracle()
    _oracle("beta")
    Agent.objects.get(name="beta").audience_groups.add(Group.objects.create(name="Beta"))
    Group.objects.get(name="Beta").user_set.add(bob)
    alices, _ = _token(server, alice)
    bobs, _ = _token(server, bob)
    listed = {
        who: [t["name"] for t in _answer(_mcp(server, tok, "tools/list"))["result"]["tools"]]
        for who, tok in (("alice", alices), ("bob", bobs))
    }
    assert listed == {"alice": ["oracle"], "bob": ["beta", "oracle"]}
    call = {"name": "beta", "arguments": {"message": QUESTION}}
    refused = _answer(_mcp(server, alices, "tools/call", call))["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "Agent not found or not exposed as a tool: beta"
    assert not Thread.objects.filter(agent__name="beta").exists()
    # The scope is mcp: the token opens no other door (the API, /v1, /a2a, /ag-ui).
    auth = {"Authorization": f"Bearer {alices}"}
    for path in ("/api/threads", "/v1/models", "/a2a/oracle/.well-known/agent-card.json"):
        assert httpx.get(f"{server}{path}", headers=auth).status_code == 401, path
    assert httpx.post(f"{server}/ag-ui/oracle", json={}, headers=auth).status_code == 401


def test_pkce_missing_plain_or_wrong_is_refused(server: str, alice: Any) -> None:
    client_id = _register(server).json()["client_id"]
    browser = Browser(server, alice)
    for params, reason in (
        ({}, "PKCE is required"),
        ({"code_challenge": "x" * 43}, "code_challenge_method must be S256"),
        ({"code_challenge": "x" * 43, "code_challenge_method": "plain"}, "must be S256"),
    ):
        page = browser.http.get(_authorize_url(server, client_id, **params))
        assert page.status_code == 400
        assert reason in page.text and "csrfmiddlewaretoken" not in page.text
    verifier, challenge = _pkce()
    code = _code(server, alice, client_id, challenge)
    missing = _exchange(server, client_id, code, None)
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    wrong = _exchange(server, client_id, _code(server, alice, client_id, challenge), "w" * 50)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    assert not OAuthToken.objects.exists()


def test_denying_consent_grants_nothing(server: str, alice: Any) -> None:
    client_id = _register(server).json()["client_id"]
    _, challenge = _pkce()
    browser = Browser(server, alice, decision="deny")
    url = _authorize_url(server, client_id, code_challenge=challenge, code_challenge_method="S256")
    asyncio.run(browser.open(url))
    assert browser.landed is not None
    query = parse_qs(urlsplit(browser.landed).query)
    assert query["error"] == ["access_denied"] and "code" not in query


def test_consent_asks_a_signed_out_person_to_sign_in_first(server: str) -> None:
    client_id = _register(server).json()["client_id"]
    url = _authorize_url(server, client_id, code_challenge="c" * 43, code_challenge_method="S256")
    page = httpx.get(url)
    assert page.status_code == 302
    assert page.headers["location"].startswith("/login/?next=/oauth/authorize%3F")


def test_registration_refuses_what_it_would_not_honour(server: str) -> None:
    remote = _register(server, redirect_uris=["http://evil.example/cb"])
    assert remote.status_code == 400
    assert remote.json()["error"] == "invalid_redirect_uri"
    assert "loopback" in remote.json()["error_description"]
    implicit = _register(server, grant_types=["implicit"])
    assert implicit.status_code == 400 and implicit.json()["error"] == "invalid_client_metadata"
    assert not OAuthClient.objects.exists()


def test_an_unknown_client_or_redirect_uri_is_never_redirected_to(server: str, alice: Any) -> None:
    client_id = _register(server).json()["client_id"]
    browser = Browser(server, alice)
    for url in (
        _authorize_url(server, "nobody", code_challenge="c" * 43, code_challenge_method="S256"),
        _authorize_url(server, client_id, redirect_uri="http://127.0.0.1:9/elsewhere"),
    ):
        page = browser.http.get(url)
        assert page.status_code == 400, page.text
        assert "location" not in page.headers


def test_bad_requests_to_the_endpoints_get_json_errors(client: DjangoClient) -> None:
    cases = [
        ("post", "/oauth/register", "not json", "application/json", 400),
        ("post", "/oauth/register", "[1, 2]", "application/json", 400),
        ("post", "/oauth/token", "grant_type=password", "application/x-www-form-urlencoded", 400),
        ("post", "/oauth/token", "", "application/x-www-form-urlencoded", 400),
        ("post", "/oauth/revoke", "token=x", "application/x-www-form-urlencoded", 401),
        ("get", "/oauth/token", "", "", 405),
        ("get", "/oauth/register", "", "", 405),
        ("delete", "/oauth/revoke", "", "", 405),
    ]
    for method, path, body, content_type, status in cases:
        kwargs = {"data": body, "content_type": content_type} if method == "post" else {}
        response = getattr(client, method)(path, HTTP_HOST="localhost", **kwargs)
        assert response.status_code == status, (path, body, response.content)
        assert response["Content-Type"].startswith("application/json"), (path, response.content)
        assert "error" in json.loads(response.content), (path, response.content)
    # OAuth over plain http is refused off the loopback (Authlib's rule), in the same terms.
    insecure = client.post("/oauth/token", data={"grant_type": "authorization_code"})
    assert insecure.status_code == 400
    assert json.loads(insecure.content)["error"] == "insecure_transport"


def test_a_refresh_rotates_the_tokens_and_no_token_reaches_a_log(
    server: str, alice: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    _oracle()
    client_id = _register(server).json()["client_id"]
    verifier, challenge = _pkce()
    first = _exchange(server, client_id, _code(server, alice, client_id, challenge), verifier)
    tokens = first.json()
    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": client_id,
    }
    renewed = httpx.post(f"{server}/oauth/token", data=refresh)
    assert renewed.status_code == 200, renewed.text
    fresh = renewed.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert _mcp(server, fresh["access_token"], "tools/list").status_code == 200
    # The old pair went with the refresh; the old refresh token cannot be used twice.
    assert _mcp(server, tokens["access_token"], "tools/list").status_code == 401
    assert httpx.post(f"{server}/oauth/token", data=refresh).json()["error"] == "invalid_grant"
    issued = [tokens["access_token"], tokens["refresh_token"], fresh["access_token"]]
    assert not [t for t in issued if t in caplog.text]
    assert "Issue token" not in caplog.text


def test_any_person_revokes_their_own_connection_on_a_page(
    server: str, alice: Any, bob: Any
) -> None:
    _oracle()
    token, _ = _token(server, alice)
    bobs, _ = _token(server, bob)
    page = DjangoClient()
    page.force_login(alice)
    listing = page.get("/oauth/connections")
    assert listing.status_code == 200 and listing.content.decode().count("Revoke</button>") == 1
    [bob_row] = OAuthToken.objects.filter(user=bob)
    page.post("/oauth/connections", {"revoke": bob_row.pk})  # not hers: nothing happens
    for junk in ("", "abc", "9" * 40, "1; drop"):
        assert page.post("/oauth/connections", {"revoke": junk}).status_code == 302
    assert _mcp(server, bobs, "tools/list").status_code == 200
    mine = OAuthToken.objects.get(user=alice)
    assert page.post("/oauth/connections", {"revoke": mine.pk}).status_code == 302
    assert _mcp(server, token, "tools/list").status_code == 401
    assert "revoked" in page.get("/oauth/connections").content.decode()


def test_a_token_for_another_resource_is_refused(server: str, alice: Any) -> None:
    # RFC 8707: this server issues tokens for its own /mcp only.
    client_id = _register(server).json()["client_id"]
    _, challenge = _pkce()
    elsewhere = _authorize_url(
        server,
        client_id,
        code_challenge=challenge,
        code_challenge_method="S256",
        resource="https://other.example/mcp",
    )
    page = Browser(server, alice).http.get(elsewhere)
    assert page.status_code == 400 and f"{server}/mcp only" in page.text
    verifier, challenge = _pkce()
    code = _code(server, alice, client_id, challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": "https://other.example/mcp",
    }
    refused = httpx.post(f"{server}/oauth/token", data=form)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target"
    assert not OAuthToken.objects.exists()
