"""A person's connections to ``auth: oauth`` MCP servers (docs/mcp.md, "Servers that need
OAuth"): ``/mcp-servers/connections`` lists them with Connect and Disconnect (plain forms,
any signed-in person), ``/mcp-servers/<id>/connect`` starts the flow in the browser and
``/mcp-servers/callback`` finishes it (``services.access.mcp_connect``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from agents_app.identity.oauth import _sign_in_first
from agents_app.models import McpOAuthGrant, McpServer
from agents_app.services.access.mcp_connect import begin, finish
from agents_app.services.access.mcp_tokens import OAuthFailed, mcp_grant_revoke

_PENDING = "mcp_oauth_pending"


def _page(request: HttpRequest, context: dict[str, object], status: int = 200) -> HttpResponse:
    response = TemplateResponse(request, "oauth/mcp_connections.html", context, status=status)
    response["Cache-Control"] = "no-store"
    return response


def _pk(request: HttpRequest) -> int:
    return int(request.user.pk or 0)


def _listing(request: HttpRequest, **extra: object) -> dict[str, object]:
    servers = McpServer.objects.filter(auth="oauth", enabled=True).order_by("name")
    mine = dict(
        McpOAuthGrant.objects.filter(user_id=_pk(request)).values_list("server_id", "created_at")
    )
    return {"servers": [(s, mine.get(s.pk)) for s in servers], **extra}


@require_http_methods(["GET", "POST"])
def connections(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return _sign_in_first(request)
    if request.method == "POST":
        chosen = str(request.POST.get("disconnect", "")).strip()
        grant = (
            McpOAuthGrant.objects.filter(user_id=_pk(request), server_id=int(chosen)).first()
            if chosen.isdigit()
            else None
        )
        if grant is not None:
            mcp_grant_revoke(grant=grant)
        return HttpResponseRedirect(reverse("mcp-oauth-connections"))
    return _page(request, _listing(request))


@require_GET
def connect(request: HttpRequest, server_id: int) -> HttpResponse:
    if not request.user.is_authenticated:
        return _sign_in_first(request)
    server = get_object_or_404(McpServer, pk=server_id, auth="oauth", enabled=True)
    callback = request.build_absolute_uri(reverse("mcp-oauth-callback"))
    try:
        url, pending = begin(server, callback)
    except OAuthFailed as exc:
        return _page(
            request, _listing(request, failed=f"Could not connect to {server.name}: {exc}."), 502
        )
    request.session[_PENDING] = pending
    return HttpResponseRedirect(url)


@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return _sign_in_first(request)
    pending = request.session.pop(_PENDING, None)
    if not isinstance(pending, dict):
        return _page(
            request, _listing(request, failed="No connection was in progress: start again."), 400
        )
    query = {k: str(v)[:2000] for k, v in request.GET.items()}
    try:
        grant = finish(pending, query, request.user)
    except OAuthFailed as exc:
        return _page(request, _listing(request, failed=f"Not connected: {exc}."), 400)
    return _page(request, _listing(request, connected=grant.server.name))
