from __future__ import annotations

from django.conf import settings
from django.db import models


class McpServer(models.Model):
    """An MCP server whose tools prompts may list as ``mcp:<name>/<tool>`` (docs/mcp.md).

    Header and env values may hold ``${NAME}`` placeholders, resolved from env values
    at call time: the row itself never needs to hold a secret. ``tools`` caches the
    server's tool list (name, description, inputSchema) from the last refresh.
    """

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "stdio (runs a command on the worker)"

    name = models.CharField(max_length=128, unique=True)
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.HTTP)
    url = models.CharField(max_length=500, blank=True)
    command = models.CharField(max_length=500, blank=True)
    args = models.JSONField(default=list, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    env = models.JSONField(default=dict, blank=True)
    timeout_ms = models.IntegerField(default=30_000)
    # null: every tool the server lists; a list: only these.
    allowed_tools = models.JSONField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    # "oauth": each person connects their own account (McpOAuthGrant); docs/mcp.md.
    auth = models.CharField(
        max_length=8, choices=[("none", "None (headers)"), ("oauth", "OAuth")], default="none"
    )
    oauth_client_id = models.CharField("OAuth client id", max_length=255, blank=True)
    # A ${NAME} env value, never the secret itself.
    oauth_client_secret = models.CharField("OAuth client secret", max_length=255, blank=True)
    oauth_scope = models.CharField("OAuth scope", max_length=500, blank=True)
    tools = models.JSONField(default=list, blank=True)
    tools_refreshed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name


class McpOAuthGrant(models.Model):
    """One person's OAuth connection to one ``auth: oauth`` MCP server.

    ``sealed`` holds, encrypted as env values are (``agents_app.base.encryption``), the JSON
    of the tokens and of what refreshing and revoking them needs (token and revocation
    endpoints, the client id and the registered client's secret, the resource).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="grants")
    sealed = models.TextField()
    scope = models.CharField(max_length=500, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "server"], name="mcp_oauth_grant_once")
        ]
        verbose_name = "MCP server connection"

    def __str__(self) -> str:
        return f"{self.server} for {self.user}"
