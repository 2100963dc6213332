from __future__ import annotations

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
