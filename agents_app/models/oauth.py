"""The authorization server of ``/mcp`` (docs/mcp.md, "Signing in with OAuth"): the MCP
clients that registered themselves (RFC 7591), the codes a person's consent issued, and the
tokens; only SHA-256 hashes of codes, secrets and tokens are stored."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OAuthClient(models.Model):
    """An MCP client registered by dynamic client registration. Registering reaches nothing:
    only a person's consent (an ``OAuthToken``) does."""

    client_id = models.CharField(max_length=64, unique=True)
    # Empty for a public client (``token_endpoint_auth_method`` "none", PKCE only).
    client_secret_hash = models.CharField(max_length=64, blank=True, default="")
    client_name = models.CharField(max_length=200, blank=True, default="")
    # Registered redirect URIs, one a line (compared exactly, RFC 6749 §3.1.2.3).
    redirect_uris = models.TextField()
    grant_types = models.CharField(max_length=200, default="authorization_code refresh_token")
    token_endpoint_auth_method = models.CharField(max_length=40, default="none")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "OAuth client"

    def __str__(self) -> str:
        return self.client_name or self.client_id


class OAuthAuthorizationCode(models.Model):
    """A single-use code from a person's consent, bound to its client, redirect URI and PKCE
    challenge (S256)."""

    code_hash = models.CharField(max_length=64, unique=True)
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    redirect_uri = models.TextField()
    scope = models.CharField(max_length=200)
    code_challenge = models.CharField(max_length=128)
    code_challenge_method = models.CharField(max_length=10)
    resource = models.TextField(blank=True, default="")
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"code for {self.client}"


class OAuthToken(models.Model):
    """One connection of an MCP client to a person's account: an access token and its refresh
    token (hashes). Revoked in the studio ("Connected MCP clients") or at ``/oauth/revoke``."""

    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_tokens"
    )
    access_token_hash = models.CharField(max_length=64, unique=True)
    refresh_token_hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    scope = models.CharField(max_length=200)
    resource = models.TextField(blank=True, default="")
    issued_at = models.DateTimeField(auto_now_add=True)
    access_expires_at = models.DateTimeField()
    refresh_expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-issued_at"]
        verbose_name = "connected MCP client"

    def __str__(self) -> str:
        return f"{self.client} for {self.user}"
