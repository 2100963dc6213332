"""Routes of the identity provider's sign-in (``/oidc/``), of SCIM (``/scim/v2/``) and of the
OAuth authorization server protecting ``/mcp`` (``/oauth/``, ``/.well-known/``), included at
the site root by ``studio/urls.py``."""

from __future__ import annotations

from django.urls import path, re_path

from agents_app.identity import mcp_connect, oauth, oidc
from agents_app.identity.scim import endpoint as scim_endpoint

urlpatterns = [
    path("oidc/login/", oidc.sign_in, name="oidc-login"),
    path("oidc/callback/", oidc.callback, name="oidc-callback"),
    path("oidc/logout/", oidc.sign_out, name="oidc-logout"),
    re_path(r"^scim/v2/(?P<rest>.*)$", scim_endpoint, name="scim"),
    path(
        ".well-known/oauth-authorization-server",
        oauth.authorization_server_metadata,
        name="oauth-metadata",
    ),
    # RFC 9728 §3.1: the resource's path after the well-known name; the bare name too, for
    # clients that look at the root.
    path(".well-known/oauth-protected-resource/mcp", oauth.protected_resource_metadata),
    path(
        ".well-known/oauth-protected-resource",
        oauth.protected_resource_metadata,
        name="oauth-protected-resource",
    ),
    path("oauth/register", oauth.register, name="oauth-register"),
    path("oauth/authorize", oauth.authorize, name="oauth-authorize"),
    path("oauth/token", oauth.token, name="oauth-token"),
    path("oauth/revoke", oauth.revoke, name="oauth-revoke"),
    path("oauth/connections", oauth.connections, name="oauth-connections"),
    # A person's own accounts at auth: oauth MCP servers (docs/mcp.md).
    path("mcp-servers/connections", mcp_connect.connections, name="mcp-oauth-connections"),
    path("mcp-servers/<int:server_id>/connect", mcp_connect.connect, name="mcp-oauth-connect"),
    path("mcp-servers/callback", mcp_connect.callback, name="mcp-oauth-callback"),
]
