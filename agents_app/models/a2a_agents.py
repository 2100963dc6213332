from __future__ import annotations

from django.db import models


class A2aAgent(models.Model):
    """A remote A2A agent prompts may list as ``a2a:<name>`` (docs/api.md "A2A client").

    Header values may hold ``${NAME}`` placeholders, resolved from env values at call time:
    the row never needs to hold a secret. ``card`` caches the remote Agent Card (JSON) from
    the last fetch, for the tool's description and whether the agent streams.
    """

    name = models.CharField(max_length=128, unique=True)
    url = models.CharField(max_length=500)
    description = models.TextField(blank=True)
    headers = models.JSONField(default=dict, blank=True)
    timeout_ms = models.IntegerField(default=120_000)
    enabled = models.BooleanField(default=True)
    card = models.JSONField(null=True, blank=True)
    card_fetched_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "A2A agent"

    def __str__(self) -> str:
        return self.name
