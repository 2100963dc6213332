from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiKey(models.Model):
    """A Bearer key for programs. Only the SHA-256 of the key is stored; it is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    key_prefix = models.CharField(max_length=16, default="agtbldr_")
    last_five = models.CharField(max_length=5)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…{self.last_five})"


class WebSocketTicket(models.Model):
    """A single-use, path-bound, short-lived ticket for a browser's WebSocket."""

    ticket_hash = models.CharField(max_length=64, unique=True)
    pathname = models.CharField(max_length=500)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # The credential that minted it (``services.access.socket_credentials``: ``key:<id>`` or
    # ``session:<session key>``): the socket it opens closes when that credential is revoked.
    credential = models.CharField(max_length=100, blank=True, default="")

    def __str__(self) -> str:
        return f"ticket for {self.pathname}"
