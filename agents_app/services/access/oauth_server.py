"""The OAuth 2.1 authorization server that protects ``/mcp`` (docs/mcp.md, "Signing in with
OAuth"), built on Authlib's server parts: its Django ``AuthorizationServer``, the
authorization-code and refresh-token grants, PKCE (RFC 7636, S256 only and always required),
dynamic client registration (RFC 7591) and revocation (RFC 7009). Authlib checks the
protocol (parameters, redirect URIs, client authentication, the code verifier); this module
says where things are stored: codes, client secrets and tokens only as SHA-256 hashes.

A token carries the ``mcp`` scope and acts as the person who consented: it reaches exactly
the agents that person may reach at the moment of each request (``/mcp`` asks the same
selectors as for an API key), never more, and stops working when the person is deactivated.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from authlib.integrations.django_oauth2 import AuthorizationServer as DjangoAuthorizationServer
from authlib.oauth2.base import OAuth2Error
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidRedirectURIError
from authlib.oauth2.rfc7636 import CodeChallenge
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents_app.models import OAuthAuthorizationCode, OAuthClient, OAuthToken

SCOPE = "mcp"
ACCESS_TOKEN_PREFIX = "agtmcp_"
ACCESS_TOKEN_SECONDS = 3600
REFRESH_TOKEN_DAYS = 30
CODE_SECONDS = 300
AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
GRANT_TYPES = ["authorization_code", "refresh_token"]
LAST_USED_RESOLUTION = timedelta(minutes=1)
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class _WarningsOnly(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING


# Authlib's grants log each issued token whole ("Issue token {...}") at DEBUG: only their
# warnings and errors pass, so a token never reaches a log at any level.
for _name in ("authorization_code", "refresh_token"):
    logging.getLogger(f"authlib.oauth2.rfc6749.grants.{_name}").addFilter(_WarningsOnly())


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


# --- what Authlib works with: the rows behind its client, code and token interfaces ---------


@dataclass
class Client:
    """Authlib's ``ClientMixin`` over an ``OAuthClient`` row."""

    row: OAuthClient

    @property
    def client_id(self) -> str:
        return self.row.client_id

    def get_client_id(self) -> str:
        return self.row.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.row.redirect_uris.split()
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return SCOPE  # the one scope there is; an empty request gets it too

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.row.redirect_uris.split()

    def check_client_secret(self, client_secret: str) -> bool:
        stored = self.row.client_secret_hash
        return bool(stored) and secrets.compare_digest(stored, _hash(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.row.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.row.grant_types.split()


@dataclass
class Code:
    """Authlib's ``AuthorizationCodeMixin`` over an ``OAuthAuthorizationCode`` row."""

    row: OAuthAuthorizationCode

    @property
    def code_challenge(self) -> str:
        return self.row.code_challenge

    @property
    def code_challenge_method(self) -> str:
        return self.row.code_challenge_method

    def get_redirect_uri(self) -> str:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scope


@dataclass
class Token:
    """Authlib's ``TokenMixin`` over an ``OAuthToken`` row."""

    row: OAuthToken

    def check_client(self, client: Client) -> bool:
        return self.row.client_id == client.row.pk

    def get_scope(self) -> str:
        return self.row.scope

    def get_expires_in(self) -> int:
        return ACCESS_TOKEN_SECONDS

    def is_expired(self) -> bool:
        ends = self.row.refresh_expires_at
        return ends is not None and ends <= timezone.now()

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None

    def get_user(self) -> Any:
        return self.row.user

    def get_client(self) -> Client:
        return Client(self.row.client)


# --- PKCE, the grants and the endpoints -------------------------------------------------------


class S256Required(CodeChallenge):
    """PKCE on every authorization request, S256 only (``plain`` and none are refused)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge (S256).")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256.")
        super().validate_code_challenge(grant, redirect_uri)


class InvalidTarget(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 §2: a ``resource`` this server issues no tokens for."""

    error = "invalid_target"


def resource_url(request_uri: str) -> str:
    """The one resource tokens are for: ``/mcp`` on the site's origin."""
    public = settings.STUDIO_PUBLIC_URL.rstrip("/")
    if public:
        return f"{public}/mcp"
    parts = urlsplit(request_uri)
    return f"{parts.scheme}://{parts.netloc}/mcp"


def check_resource(request: Any) -> None:
    """Refuse a ``resource`` (RFC 8707) other than ``/mcp`` of this site."""
    wanted = request.payload.data.get("resource")
    if wanted and wanted.rstrip("/") != resource_url(request.uri):
        raise InvalidTarget(f"Tokens are issued for {resource_url(request.uri)} only.")


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_authorization_request(self) -> Any:
        redirect_uri = super().validate_authorization_request()
        check_resource(self.request)
        return redirect_uri

    def validate_token_request(self) -> None:
        super().validate_token_request()
        check_resource(self.request)

    def save_authorization_code(self, code: str, request: Any) -> OAuthAuthorizationCode:
        data = request.payload.data
        return OAuthAuthorizationCode.objects.create(
            code_hash=_hash(code),
            client=request.client.row,
            user=request.user,
            redirect_uri=request.payload.redirect_uri or "",
            scope=SCOPE,
            code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"],
            resource=data.get("resource") or "",
            expires_at=timezone.now() + timedelta(seconds=CODE_SECONDS),
        )

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        row = (
            OAuthAuthorizationCode.objects.select_related("user")
            .filter(code_hash=_hash(code), client=client.row, expires_at__gt=timezone.now())
            .first()
        )
        return Code(row) if row is not None else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        authorization_code.row.delete()

    def authenticate_user(self, authorization_code: Code) -> Any:
        user = authorization_code.row.user
        return user if user.is_active else None


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        row = (
            OAuthToken.objects.select_related("user", "client")
            .filter(refresh_token_hash=_hash(refresh_token), revoked_at__isnull=True)
            .first()
        )
        token = Token(row) if row is not None else None
        return token if token is not None and not token.is_expired() else None

    def authenticate_user(self, refresh_token: Token) -> Any:
        user = refresh_token.row.user
        return user if user.is_active else None

    def revoke_old_credential(self, refresh_token: Token) -> None:
        oauth_token_revoke(token=refresh_token.row)


class Revocation(RevocationEndpoint):  # type: ignore[misc]
    """RFC 7009: a client revokes its access or refresh token (the whole connection goes)."""

    CLIENT_AUTH_METHODS = AUTH_METHODS

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        digest = _hash(token_string)
        row = OAuthToken.objects.filter(access_token_hash=digest).first()
        if row is None:
            row = OAuthToken.objects.filter(refresh_token_hash=digest).first()
        return Token(row) if row is not None else None

    def revoke_token(self, token: Token, request: Any) -> None:
        oauth_token_revoke(token=token.row)


class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    """RFC 7591, open (MCP clients register themselves; a registration reaches nothing until
    a person consents). Unsupported grant types, response types, scopes and authentication
    methods are refused by Authlib against the server's metadata."""

    def authenticate_token(self, request: Any) -> bool:
        return True

    def get_server_metadata(self) -> dict[str, Any]:
        # What registration checks against (the *_supported lists) is the same on every host.
        return metadata("")

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if _auth_method(request.payload.data) == "none":
            del info["client_secret"], info["client_secret_expires_at"]
        return info

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> Client:
        uris = client_metadata.get("redirect_uris") or []
        for uri in uris:
            refusal = redirect_uri_refusal(uri)
            if refusal is not None:
                raise InvalidRedirectURIError(refusal)
        secret = client_info.get("client_secret")
        row = OAuthClient.objects.create(
            client_id=client_info["client_id"],
            client_secret_hash=_hash(secret) if secret else "",
            client_name=str(client_metadata.get("client_name") or "")[:200],
            redirect_uris="\n".join(uris),
            grant_types=" ".join(client_metadata.get("grant_types") or ["authorization_code"]),
            token_endpoint_auth_method=_auth_method(client_metadata),
        )
        return Client(row)


def _auth_method(metadata: dict[str, Any]) -> str:
    # RFC 7591 §2: an absent method means client_secret_basic.
    return str(metadata.get("token_endpoint_auth_method") or "client_secret_basic")


def redirect_uri_refusal(uri: str) -> str | None:
    """Why ``uri`` may not receive codes: https, http on the loopback only (RFC 8252 §7.3), or
    an app's own scheme (``cursor://…``); never a script or data URL, never a fragment."""
    parts = urlsplit(uri)
    if parts.fragment:
        return f"{uri}: a redirect URI may not have a fragment."
    if parts.scheme == "https" and parts.netloc:
        return None
    if parts.scheme == "http":
        if parts.hostname in _LOOPBACK:
            return None
        return f"{uri}: plain http is allowed for loopback addresses only."
    if parts.scheme in ("", "javascript", "data", "file", "vbscript", "about", "blob"):
        return f"{uri}: not a redirect URI this server sends codes to."
    return None


class Server(DjangoAuthorizationServer):  # type: ignore[misc]
    """Authlib's Django authorization server over our rows."""

    def __init__(self) -> None:
        super().__init__(OAuthClient, OAuthToken)
        self.scopes_supported = [SCOPE]
        self.register_token_generator(
            "default",
            BearerTokenGenerator(
                access_token_generator=lambda **_: ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32),
                refresh_token_generator=lambda **_: secrets.token_urlsafe(48),
                expires_generator=lambda client, grant_type: ACCESS_TOKEN_SECONDS,
            ),
        )
        self.register_grant(AuthorizationCodeGrant, [S256Required(required=True)])
        self.register_grant(RefreshTokenGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Registration)

    def query_client(self, client_id: str) -> Client | None:
        row = OAuthClient.objects.filter(client_id=client_id).first()
        return Client(row) if row is not None else None

    def save_token(self, token: dict[str, Any], request: Any) -> OAuthToken:
        now = timezone.now()
        refresh = token.get("refresh_token")
        return OAuthToken.objects.create(
            client=request.client.row,
            user=request.user,
            access_token_hash=_hash(token["access_token"]),
            refresh_token_hash=_hash(refresh) if refresh else None,
            scope=SCOPE,
            resource=request.payload.data.get("resource") or "",
            access_expires_at=now + timedelta(seconds=int(token["expires_in"])),
            refresh_expires_at=now + timedelta(days=REFRESH_TOKEN_DAYS) if refresh else None,
        )


SERVER = Server()


def metadata(issuer: str) -> dict[str, Any]:
    """RFC 8414 authorization server metadata, ``issuer`` being the site's origin."""
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/oauth/authorize",
        "token_endpoint": f"{issuer}/oauth/token",
        "registration_endpoint": f"{issuer}/oauth/register",
        "revocation_endpoint": f"{issuer}/oauth/revoke",
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "grant_types_supported": GRANT_TYPES,
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": AUTH_METHODS,
        "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
    }


# --- the resource side: /mcp and the studio -------------------------------------------------


def oauth_token_in_use(raw: str) -> OAuthToken | None:
    """The unrevoked, unexpired ``mcp`` token ``raw`` of an active user (``user`` loaded)."""
    if not isinstance(raw, str) or not raw.startswith(ACCESS_TOKEN_PREFIX) or len(raw) > 100:
        return None
    now = timezone.now()
    row = (
        OAuthToken.objects.select_related("user")
        .filter(
            access_token_hash=_hash(raw),
            revoked_at__isnull=True,
            access_expires_at__gt=now,
            user__is_active=True,
        )
        .first()
    )
    if row is None or SCOPE not in row.scope.split():
        return None
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        OAuthToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


def oauth_token_revoke(*, token: OAuthToken) -> OAuthToken:
    """Revoke one connection (its access and refresh token); revoking twice changes nothing."""
    with transaction.atomic():
        OAuthToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
    token.refresh_from_db(fields=["revoked_at"])
    return token


def connected_clients(user: Any) -> QuerySet[OAuthToken]:
    """The person's connections, newest first (the studio's list)."""
    return OAuthToken.objects.filter(user=user).select_related("client")
