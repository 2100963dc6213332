"""``/mcp`` as an OAuth-protected resource (docs/mcp.md, "Signing in with OAuth"): the
metadata documents (RFC 9728 for the resource, RFC 8414 for the authorization server), and
the authorization server's endpoints, ``/oauth/register`` (RFC 7591), ``/oauth/authorize``
(the consent page, a plain form: it works without JavaScript), ``/oauth/token`` and
``/oauth/revoke`` (RFC 7009). The protocol is Authlib's (``services.access.oauth_server``);
this module shapes the pages and answers."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749.errors import OAuth2Error
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from agents_app.services.access.oauth_server import (
    SCOPE,
    SERVER,
    connected_clients,
    metadata,
    oauth_token_revoke,
)

RESOURCE_PATH = "/mcp"


def issuer(request: HttpRequest) -> str:
    """The site's origin (``STUDIO_PUBLIC_URL`` when set): the issuer and the resource's base."""
    public = settings.STUDIO_PUBLIC_URL.rstrip("/")
    return public or f"{request.scheme}://{request.get_host()}"


def _json(body: dict[str, object]) -> JsonResponse:
    response = JsonResponse(body)
    response["Cache-Control"] = "max-age=300"
    response["Access-Control-Allow-Origin"] = "*"  # public metadata, read by browser clients too
    return response


@require_GET
def authorization_server_metadata(request: HttpRequest) -> JsonResponse:
    return _json(metadata(issuer(request)))


@require_GET
def protected_resource_metadata(request: HttpRequest) -> JsonResponse:
    origin = issuer(request)
    return _json(
        {
            "resource": origin + RESOURCE_PATH,
            "authorization_servers": [origin],
            "scopes_supported": [SCOPE],
            "bearer_methods_supported": ["header"],
            "resource_name": "Agents (MCP)",
        }
    )


View = Callable[[HttpRequest], HttpResponse]


def _program_endpoint(view: View) -> View:
    """POST only, answered in JSON either way (405 names ``Allow``); no CSRF check, as the
    callers are programs with no session (the client authenticates itself, or is public)."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            refusal = _error(405, "invalid_request", "Send this request with POST.")
            refusal["Allow"] = "POST"
            return refusal
        try:
            return view(request)
        except OAuth2Error as error:  # raised before Authlib shapes an answer (plain http)
            return _error(400, error.error, error.description or error.error)

    return csrf_exempt(wrapped)


def _error(status: int, error: str, description: str) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@_program_endpoint
def register(request: HttpRequest) -> HttpResponse:
    try:
        body = json.loads(request.body)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return _error(400, "invalid_client_metadata", "The body must be a JSON object.")
    return SERVER.create_endpoint_response("client_registration", request)  # type: ignore[no-any-return]


@_program_endpoint
def token(request: HttpRequest) -> HttpResponse:
    return SERVER.create_token_response(request)  # type: ignore[no-any-return]


@_program_endpoint
def revoke(request: HttpRequest) -> HttpResponse:
    return SERVER.create_endpoint_response("revocation", request)  # type: ignore[no-any-return]


@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    """The consent page (GET) and the person's answer (POST, the same URL and query)."""
    if not request.user.is_authenticated:
        return _sign_in_first(request)
    try:
        grant = SERVER.get_consent_grant(request, end_user=request.user)
    except OAuth2Error as error:
        # An unknown client or a redirect URI it did not register: never redirect there.
        context = {"reason": error.description or error.error}
        return _page(request, "oauth/refused.html", context, status=400)
    if request.method == "POST":
        allowed = request.POST.get("decision") == "allow"
        user = request.user if allowed else None
        return SERVER.create_authorization_response(request, grant_user=user, grant=grant)  # type: ignore[no-any-return]
    redirect_uri = grant.redirect_uri
    client = grant.client.row
    context = {
        "client_name": client.client_name or "An MCP client",
        "named": bool(client.client_name),
        "client_id": client.client_id,
        "redirect_to": urlsplit(redirect_uri).netloc or urlsplit(redirect_uri).scheme + ":",
        "resource": issuer(request) + RESOURCE_PATH,
    }
    response = _page(request, "oauth/consent.html", context)
    if settings.STUDIO_CSP:
        response["Content-Security-Policy"] = _consent_policy(redirect_uri)
    return response


@require_http_methods(["GET", "POST"])
def connections(request: HttpRequest) -> HttpResponse:
    """The person's connected MCP clients, each with Revoke (a plain form, any person signed
    in, staff or not; the studio's admin list shows the same to staff)."""
    if not request.user.is_authenticated:
        return _sign_in_first(request)
    rows = connected_clients(request.user)
    if request.method == "POST":
        chosen = str(request.POST.get("revoke", "")).strip()
        token = rows.filter(pk=int(chosen)).first() if chosen.isdigit() else None
        if token is not None:
            oauth_token_revoke(token=token)
        return HttpResponseRedirect(reverse("oauth-connections"))
    return _page(request, "oauth/connections.html", {"connections": list(rows[:200])})


def _sign_in_first(request: HttpRequest) -> HttpResponse:
    # The chat's sign-in page: every person has one (the studio's is for staff).
    return redirect_to_login(request.get_full_path(), login_url=reverse("chat-login"))


def _page(
    request: HttpRequest, template: str, context: dict[str, object], status: int = 200
) -> HttpResponse:
    response = TemplateResponse(request, template, context, status=status)
    response["Cache-Control"] = "no-store"
    return response


def _consent_policy(redirect_uri: str) -> str:
    """The studio's policy, with the client's redirect target allowed as where the form's
    answer may lead (browsers apply ``form-action`` to the redirect after a POST) and no
    framing at all (the page is a consent: clickjacking it would grant access)."""
    parts = urlsplit(redirect_uri)
    target = f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"
    policy = settings.STUDIO_CSP.replace("form-action 'self'", f"form-action 'self' {target}")
    return policy.replace("frame-ancestors 'self'", "frame-ancestors 'none'")
