"""Connecting a person's account to an ``auth: oauth`` MCP server, in their browser.

``begin``: the server's protected-resource metadata (RFC 9728, named by its 401's
``WWW-Authenticate`` or at the well-known addresses), its authorization server's metadata
(RFC 8414 or OpenID discovery; the issuer must be the one the resource named), a client
(the server's configured client id and ``${NAME}`` secret, else dynamic registration,
RFC 7591), PKCE S256 and a state; the browser is sent to the authorization endpoint with
the resource (RFC 8707). ``finish``: the state checked, the issuer too when the answer
carries one (RFC 9207), the code exchanged with the verifier, the tokens stored encrypted
(``tokens.store_grant``). The pending flow lives in the person's (server-side) session.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any
from urllib.parse import urlencode

import httpx

from agents_app.models import EnvValue, McpOAuthGrant, McpServer
from agents_app.services.access.mcp_tokens import OAuthFailed, store_grant, token_request
from runtime.core import egress
from runtime.core.env_refs import PLACEHOLDER

CLIENT_NAME = "Agent studio"
_RESOURCE_METADATA = re.compile(r'resource_metadata="([^"]+)"')


def _get_json(http: httpx.Client, url: str) -> dict[str, Any] | None:
    try:
        response = http.get(url, headers={"Accept": "application/json"})
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _resource_metadata(http: httpx.Client, url: str) -> dict[str, Any]:
    named = None
    try:
        probe = http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        found = _RESOURCE_METADATA.search(probe.headers.get("www-authenticate", ""))
        named = found.group(1) if found else None
    except httpx.HTTPError as exc:
        raise OAuthFailed(f"the server could not be reached ({type(exc).__name__})") from None
    for candidate in _auth_utils().build_protected_resource_metadata_discovery_urls(named, url):
        body = _get_json(http, candidate)
        if body and body.get("authorization_servers"):
            return body
    raise OAuthFailed("the server publishes no OAuth protected-resource metadata (RFC 9728)")


def _server_metadata(http: httpx.Client, issuer: str, url: str) -> dict[str, Any]:
    for candidate in _auth_utils().build_oauth_authorization_server_metadata_discovery_urls(
        issuer, url
    ):
        body = _get_json(http, candidate)
        if body and body.get("authorization_endpoint") and body.get("token_endpoint"):
            if not _auth_utils().issuers_match(str(body.get("issuer", "")), issuer):
                raise OAuthFailed(
                    f"the authorization server's metadata names issuer {body.get('issuer')!r}, "
                    f"not {issuer!r}"
                )
            methods = body.get("code_challenge_methods_supported")
            if methods is not None and "S256" not in methods:
                raise OAuthFailed("the authorization server does not support PKCE S256")
            return body
    raise OAuthFailed(f"no authorization server metadata at {issuer}")


def _instance_secret(template: str) -> str:
    found = PLACEHOLDER.fullmatch(template.strip())
    if found is None:
        return ""
    row = EnvValue.objects.filter(scope="instance", key=found.group(1)).first()
    if row is None:
        raise OAuthFailed(f"the client secret's env value {found.group(1)} is not set")
    return row.value


def _client(
    http: httpx.Client, server: McpServer, meta: dict[str, Any], redirect_uri: str
) -> dict[str, str]:
    if server.oauth_client_id:
        return {
            "client_id": server.oauth_client_id,
            "client_secret": _instance_secret(server.oauth_client_secret),
        }
    endpoint = meta.get("registration_endpoint")
    if not endpoint:
        raise OAuthFailed(
            "the authorization server offers no dynamic registration: give the server an "
            "OAuth client id"
        )
    try:
        response = http.post(
            endpoint,
            json={
                "client_name": CLIENT_NAME,
                "redirect_uris": [redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                **({"scope": server.oauth_scope} if server.oauth_scope else {}),
            },
        )
    except httpx.HTTPError as exc:
        raise OAuthFailed(f"registration failed ({type(exc).__name__})") from None
    body = (
        response.json()
        if response.headers.get("content-type", "").startswith("application/json")
        else {}
    )
    if response.status_code not in (200, 201) or not body.get("client_id"):
        raise OAuthFailed(f"registration was refused (HTTP {response.status_code})")
    return {
        "client_id": str(body["client_id"]),
        "client_secret": str(body.get("client_secret") or ""),
    }


def begin(server: McpServer, redirect_uri: str) -> tuple[str, dict[str, Any]]:
    """The authorization URL to send the browser to, and the pending flow to keep."""
    if server.auth != "oauth" or server.transport != "http":
        raise OAuthFailed(f"MCP server '{server.name}' does not use OAuth")
    with egress.sync_client(timeout=20) as http:
        resource = _resource_metadata(http, server.url)
        issuer = str(resource["authorization_servers"][0])
        meta = _server_metadata(http, issuer, server.url)
        client = _client(http, server, meta, redirect_uri)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    state = secrets.token_urlsafe(24)
    target = str(resource.get("resource") or server.url)
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
        "resource": target,
    }
    scope = server.oauth_scope or " ".join(resource.get("scopes_supported") or [])
    if scope:
        params["scope"] = scope
    endpoint = str(meta["authorization_endpoint"])
    url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
    pending = {
        **client,
        "server": server.pk,
        "state": state,
        "verifier": verifier,
        "redirect_uri": redirect_uri,
        "issuer": str(meta.get("issuer") or issuer),
        "token_endpoint": str(meta["token_endpoint"]),
        "revocation_endpoint": str(meta.get("revocation_endpoint") or ""),
        "resource": target,
    }
    return url, pending


def finish(pending: dict[str, Any], query: dict[str, str], user: Any) -> McpOAuthGrant:
    """Exchange the code the browser brought back; the state must be the pending flow's."""
    if not secrets.compare_digest(str(query.get("state", "")), str(pending["state"])):
        raise OAuthFailed("the answer does not belong to this connection attempt (state)")
    if query.get("error"):
        raise OAuthFailed(f"the authorization server answered {query['error'][:80]}")
    if query.get("iss") and not _auth_utils().issuers_match(query["iss"], pending["issuer"]):
        raise OAuthFailed("the answer came from another authorization server (iss)")
    if not query.get("code"):
        raise OAuthFailed("the answer carries no code")
    answer = token_request(
        pending,
        {
            "grant_type": "authorization_code",
            "code": query["code"],
            "redirect_uri": pending["redirect_uri"],
            "code_verifier": pending["verifier"],
        },
    )
    server = McpServer.objects.get(pk=pending["server"])
    keep: dict[str, Any] = {
        k: pending[k]
        for k in ("client_id", "client_secret", "token_endpoint", "revocation_endpoint", "resource")
    }
    # The address the tokens were issued for: a server moved elsewhere never gets them.
    keep["server_url"] = server.url
    return store_grant(server=server, user=user, answer=answer, client=keep)


def _auth_utils() -> Any:
    """The MCP SDK's OAuth discovery helpers, imported when a person connects (the SDK costs
    about a second of CPU at import; a server process should not pay it to start)."""
    from mcp.client.auth import utils

    return utils
