"""Login, logout, who am I, sign-in options, CSRF token, WebSocket tickets.

Our pages log in with a Django session (``POST /api/auth/login`` with ``X-CSRFToken`` sets
the session cookie; unsafe requests then send ``X-CSRFToken``). A client without the CSRF
header (the reference studio, scripts) gets a short-lived bearer token instead
(``services.access.login_tokens``) and no cookie. Programs may also use API keys. Failed logins
are limited per client address and per account, in counters the HTML sign-in forms share
(``agents_app.services.access.limits``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, login, logout
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from ninja import Field, Router, Schema
from ninja.errors import HttpError
from ninja.utils import check_csrf

from agents_app import wire
from agents_app.api.authed import AuthedRequest
from agents_app.api.instance_responses import AuthConfigOut, CsrfOut, LoginOut, RevokedOut
from agents_app.api.limits import limited
from agents_app.api.responses import MeOut, SuccessOut, TicketOut
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Forbidden, Invalid
from agents_app.models import ApiKey
from agents_app.services.access import limits, login_tokens, socket_credentials, tickets
from agents_app.services.access.api_keys import _hash as key_hash
from agents_app.services.access.api_keys import api_key_revoke
from agents_app.services.operations import instance_info

router = Router(tags=["auth"])


class LoginIn(Schema):
    username: str = Field("", max_length=150)
    password: str = Field(..., max_length=1024)


class TicketIn(Schema):
    pathname: str = Field(..., max_length=500)


def _csrf(request: HttpRequest) -> None:
    if check_csrf(request):
        raise HttpError(403, "CSRF check failed")


@router.get(
    "/csrf", auth=None, response={200: CsrfOut}, summary="Get a CSRF token (sets the cookie)"
)
def csrf_token(request: HttpRequest) -> dict[str, Any]:
    return {"csrfToken": get_token(request)}


def _wants_cookie(request: HttpRequest) -> bool:
    """Our own pages send the CSRF header and get the session cookie; a client without it
    (the reference studio, scripts) gets a bearer token and no cookie, so there is no
    login CSRF to guard against."""
    return settings.CSRF_HEADER_NAME in request.META


@router.post("/login", auth=None, response={200: LoginOut, **ERRORS}, summary="Log in")
def login_view(request: HttpRequest, payload: LoginIn, response: HttpResponse) -> Any:
    cookie = _wants_cookie(request)
    if cookie:
        _csrf(request)
    response["Cache-Control"] = "no-store"
    if not payload.password:
        raise Invalid("Password is required")
    if not payload.username:
        raise Invalid("Username is required")
    attempt = limits.login_attempt(request, payload.username)
    user = authenticate(request, username=payload.username, password=payload.password)
    if user is None:
        raise HttpError(401, "Invalid username or password")
    attempt.refund()  # only failures count
    if cookie:
        login(request, user)
        return {"user": wire.user_wire(user), "authType": "session"}
    token = login_tokens.login_token_create(user)
    return {"token": token, "user": wire.user_wire(user), "authType": "session"}


@router.get("/config", auth=None, response={200: AuthConfigOut}, summary="Sign-in options")
def auth_config(request: HttpRequest) -> dict[str, Any]:
    return instance_info.auth_config()


@router.post("/logout", response={200: SuccessOut, **ERRORS}, summary="Log out")
def logout_view(request: HttpRequest) -> dict[str, Any]:
    token = getattr(request, "login_token", None)
    if token:
        login_tokens.login_token_revoke(token)
    elif getattr(request, "auth_type", "") == "session":
        logout(request)
    return {"success": True}


@router.get("/me", response={200: MeOut, **ERRORS}, summary="Who am I")
def me(request: AuthedRequest) -> dict[str, Any]:
    return {
        "user": wire.user_wire(request.auth),
        "authType": getattr(request, "auth_type", "session"),
    }


def _request_credential(request: HttpRequest) -> socket_credentials.SocketCredential | None:
    """The credential this request authenticated with (``api.security`` sets ``api_key_id``,
    ``login_token`` or a session): the ticket's socket lives only as long as it does."""
    key_id = getattr(request, "api_key_id", None)
    if key_id is not None:
        return socket_credentials.key_credential(key_id)
    token = getattr(request, "login_token", None)
    if token:
        session_key = login_tokens.token_session_key(token)
        return socket_credentials.session_credential(session_key) if session_key else None
    session = getattr(request, "session", None)
    session_key = getattr(session, "session_key", None)
    return socket_credentials.session_credential(session_key) if session_key else None


@router.post(
    "/websocket-ticket", response={200: TicketOut, **ERRORS}, summary="Mint a WebSocket ticket"
)
@limited("ws_ticket")
def websocket_ticket(request: AuthedRequest, payload: TicketIn) -> dict[str, Any]:
    raw = tickets.ticket_create(
        user=request.auth,
        pathname=payload.pathname,
        credential=_request_credential(request),
    )
    return {"ticket": raw, "expires_in": tickets.TTL_SECONDS}


@router.delete(
    "/current-key", response={200: RevokedOut, **ERRORS}, summary="Revoke the key in use"
)
def revoke_current_key(request: HttpRequest) -> dict[str, Any]:
    if getattr(request, "auth_type", "") != "api_key":
        raise Forbidden("Only an API key can revoke itself")
    token = request.headers.get("Authorization", "").partition(" ")[2].strip()
    row = ApiKey.objects.filter(key_hash=key_hash(token), revoked_at__isnull=True).first()
    if row is not None:
        api_key_revoke(api_key=row)
    return {"revoked": True}
