"""The OpenID Connect client (Authlib's Django client), built from the settings alone.

Authlib reads the provider's discovery document (``<issuer>/.well-known/openid-configuration``)
once and its keys (``jwks_uri``) when needed, again when a token names a key it has not seen
(the provider rotated its keys). The authorization code flow runs with PKCE (S256), a random
``state`` kept in the session and checked on the way back, and a ``nonce`` the ID token must
carry; ID tokens are verified against the provider's keys, issuer, audience and times
(``agents_app.identity.oidc``). The client secret travels only to the token endpoint.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urljoin

from authlib.common.errors import AuthlibBaseError
from authlib.integrations.django_client import OAuth
from django.conf import settings
from django.http import HttpRequest
from requests import RequestException

# The session keys of a sign-in made through the provider.
ID_TOKEN_SESSION_KEY = "studio_oidc_id_token"
NEXT_SESSION_KEY = "studio_oidc_next"
HTTP_TIMEOUT_SECONDS = 10

_lock = threading.Lock()
_clients: dict[tuple[str, str, str, str], Any] = {}


def client() -> Any:
    """The registered Authlib app for the configured provider (one per configuration)."""
    key = (
        settings.STUDIO_OIDC_ISSUER,
        settings.STUDIO_OIDC_CLIENT_ID,
        settings.STUDIO_OIDC_CLIENT_SECRET,
        settings.STUDIO_OIDC_SCOPES,
    )
    with _lock:
        app = _clients.get(key)
        if app is None:
            oauth = OAuth()
            app = oauth.register(
                "studio",
                client_id=settings.STUDIO_OIDC_CLIENT_ID,
                client_secret=settings.STUDIO_OIDC_CLIENT_SECRET,
                server_metadata_url=(
                    f"{settings.STUDIO_OIDC_ISSUER}/.well-known/openid-configuration"
                ),
                client_kwargs={
                    "scope": settings.STUDIO_OIDC_SCOPES,
                    "code_challenge_method": "S256",
                    "default_timeout": HTTP_TIMEOUT_SECONDS,
                },
            )
            _clients.clear()
            _clients[key] = app
        return app


def absolute(request: HttpRequest, path: str) -> str:
    """``path`` on the public origin (``STUDIO_PUBLIC_URL``), else on the request's."""
    base = settings.STUDIO_PUBLIC_URL
    return (
        urljoin(base.rstrip("/") + "/", path.lstrip("/"))
        if base
        else request.build_absolute_uri(path)
    )


def provider_sign_out_url(request: HttpRequest, id_token: str) -> str:
    """Where to send a browser that signed out here to sign out at the provider too
    (back to the chat's sign-in page after); empty without a provider session or endpoint."""
    if not (id_token and settings.STUDIO_OIDC_ISSUER):
        return ""
    try:
        return end_session_url(request, id_token, "/login/")
    except (RequestException, AuthlibBaseError):
        return ""


def end_session_url(request: HttpRequest, id_token: str, after: str) -> str:
    """The provider's RP-initiated logout URL for ``id_token``, coming back to ``after``
    (a path here); empty when the provider has no ``end_session_endpoint``."""
    app = client()
    if not app.load_server_metadata().get("end_session_endpoint"):
        return ""
    return str(
        app.create_logout_url(
            post_logout_redirect_uri=absolute(request, after),
            id_token_hint=id_token,
            client_id=settings.STUDIO_OIDC_CLIENT_ID,
        )["url"]
    )
