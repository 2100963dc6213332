"""A person's OAuth tokens for ``auth: oauth`` MCP servers: stored encrypted (as env values
are), refreshed when expired, revoked by the person or by staff, and handed to the engine for
the thread owner's tool calls (``DjangoMcpTokens``)."""

from __future__ import annotations

import contextlib
import json
from datetime import timedelta
from typing import Any

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from agents_app.base.encryption import decrypt, encrypt
from agents_app.models import McpOAuthGrant, McpServer, Thread
from runtime.core import egress
from runtime.mcp.servers import McpConfigError
from runtime.mcp.servers import McpServer as RuntimeServer

# A token this close to its expiry is refreshed before use.
EARLY = timedelta(seconds=60)


class OAuthFailed(Exception):
    """The flow or a refresh failed; ``str`` says why in words (never a token)."""


def connect_url(server: McpServer) -> str:
    """Where a person connects their account to ``server`` (absolute when the site's public
    URL is configured, so a link in a chat works from anywhere)."""
    path = reverse("mcp-oauth-connect", args=[server.pk])
    return settings.STUDIO_PUBLIC_URL.rstrip("/") + path


def must_connect(server: McpServer, why: str = "") -> McpConfigError:
    lead = why or f"MCP server '{server.name}' needs your own account, and it is not connected."
    return McpConfigError(
        f"{lead} Ask the person to connect it once at {connect_url(server)} and then try again."
    )


def seal(data: dict[str, Any]) -> str:
    return encrypt(json.dumps(data))


def unseal(grant: McpOAuthGrant) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(decrypt(grant.sealed))
    return value


def expiry(answer: dict[str, Any]) -> Any:
    seconds = answer.get("expires_in")
    if isinstance(seconds, int | float) and seconds > 0:
        return timezone.now() + timedelta(seconds=float(seconds))
    return None


def store_grant(
    *, server: McpServer, user: Any, answer: dict[str, Any], client: dict[str, Any]
) -> McpOAuthGrant:
    """Keep the token endpoint's ``answer`` (encrypted) with what refreshing it needs."""
    data = {
        **client,
        "access_token": answer["access_token"],
        "refresh_token": answer.get("refresh_token") or "",
    }
    grant, _ = McpOAuthGrant.objects.update_or_create(
        user=user,
        server=server,
        defaults={
            "sealed": seal(data),
            "scope": str(answer.get("scope") or "")[:500],
            "expires_at": expiry(answer),
        },
    )
    return grant


def token_request(data: dict[str, Any], form: dict[str, str]) -> dict[str, Any]:
    """POST ``form`` to the token endpoint (the client's secret, when it has one, sent as
    ``client_secret_post``); ``OAuthFailed`` names the endpoint's error code."""
    body = {**form, "client_id": data["client_id"]}
    if data.get("client_secret"):
        body["client_secret"] = data["client_secret"]
    if data.get("resource"):
        body["resource"] = data["resource"]
    try:
        with egress.sync_client(timeout=20) as http:
            response = http.post(data["token_endpoint"], data=body)
    except httpx.HTTPError as exc:
        raise OAuthFailed(
            f"the token endpoint could not be reached ({type(exc).__name__})"
        ) from None
    try:
        answer = response.json()
    except ValueError:
        answer = {}
    if response.status_code != 200 or not isinstance(answer, dict):
        code = answer.get("error") if isinstance(answer, dict) else None
        raise OAuthFailed(
            f"the token endpoint answered HTTP {response.status_code}"
            + (f" ({str(code)[:80]})" if code else "")
        )
    if not isinstance(answer.get("access_token"), str) or not answer["access_token"]:
        raise OAuthFailed("the token endpoint's answer has no access_token")
    return answer


class _Forget(Exception):
    """The connection cannot be used any more: forget it (after the lock's transaction)."""

    def __init__(self, pk: int, why: str) -> None:
        super().__init__(why)
        self.pk, self.why = pk, why


def access_token_for(server: McpServer, user: Any) -> str:
    """``user``'s valid access token for ``server``, refreshed first when it has expired
    (under a row lock, so two calls do not spend one rotating refresh token twice).
    ``McpConfigError`` (with the connect link) when there is none or it cannot be renewed;
    a connection that cannot be used any more is forgotten."""
    if user is None or not getattr(user, "pk", None):
        raise must_connect(server)
    try:
        with transaction.atomic():
            return _locked_token(server, user)
    except _Forget as gone:
        McpOAuthGrant.objects.filter(pk=gone.pk).delete()
        raise must_connect(server, gone.why) from None


def _locked_token(server: McpServer, user: Any) -> str:
    grant = McpOAuthGrant.objects.select_for_update().filter(user=user, server=server).first()
    if grant is None:
        raise must_connect(server)
    data = unseal(grant)
    if data.get("server_url") != server.url:
        # Edited to point elsewhere since the person connected: their tokens stay here.
        raise _Forget(
            grant.pk, f"MCP server '{server.name}' moved to another address since you connected."
        )
    if grant.expires_at is None or grant.expires_at - EARLY > timezone.now():
        return str(data["access_token"])
    if not data.get("refresh_token"):
        raise _Forget(grant.pk, f"The connection to MCP server '{server.name}' expired.")
    try:
        answer = token_request(
            data, {"grant_type": "refresh_token", "refresh_token": data["refresh_token"]}
        )
    except OAuthFailed as exc:
        raise _Forget(
            grant.pk,
            f"The connection to MCP server '{server.name}' could not be renewed ({exc}).",
        ) from None
    data["access_token"] = answer["access_token"]
    data["refresh_token"] = answer.get("refresh_token") or data["refresh_token"]
    grant.sealed = seal(data)
    grant.expires_at = expiry(answer)
    grant.scope = str(answer.get("scope") or grant.scope)[:500]
    grant.save(update_fields=["sealed", "expires_at", "scope", "updated_at"])
    return str(data["access_token"])


def mcp_grant_revoke(*, grant: McpOAuthGrant) -> None:
    """Forget the connection; the authorization server is asked to revoke its tokens too
    (RFC 7009, when its metadata names a revocation endpoint; best effort)."""
    data = unseal(grant)
    endpoint = data.get("revocation_endpoint")
    grant.delete()
    if not endpoint:
        return
    for kind in ("refresh_token", "access_token"):
        if not data.get(kind):
            continue
        body = {"token": data[kind], "token_type_hint": kind, "client_id": data["client_id"]}
        if data.get("client_secret"):
            body["client_secret"] = data["client_secret"]
        with contextlib.suppress(httpx.HTTPError), egress.sync_client(timeout=10) as http:
            http.post(endpoint, data=body)


def _for_thread(name: str, thread_id: str | None) -> str:
    server = McpServer.objects.filter(name=name).first()
    if server is None:
        raise McpConfigError(f"MCP server '{name}' does not exist.")
    owner = None
    if thread_id is not None:
        thread = Thread.objects.filter(pk=thread_id).select_related("owner").first()
        owner = thread.owner if thread is not None else None
    return access_token_for(server, owner)


class DjangoMcpTokens:
    """``runtime.mcp.client.McpTokenSource``: the thread owner's token."""

    async def access_token(self, server: RuntimeServer, thread_id: str | None) -> str:
        return await sync_to_async(_for_thread)(server.name, thread_id)
