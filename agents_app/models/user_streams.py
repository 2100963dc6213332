from __future__ import annotations

from django.conf import settings
from django.db import models


class UserStreamClient(models.Model):
    """One open ``/api/users/me/stream`` socket (spec 0.2.0 user event stream): which
    channel reaches it, so ``clients()`` and ``send(clientId, frame)`` work from any
    process. A row is written when the socket opens, deleted when it closes and touched
    while it lives; one left behind by a process that died stops counting after
    ``services.users.stream.STALE_SECONDS``."""

    client_id = models.CharField(max_length=64, primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="stream_clients"
    )
    channel_name = models.CharField(max_length=200)
    seen_at = models.DateTimeField()

    class Meta:
        # Serves client_ids(user): one user's live sockets.
        indexes = [models.Index(fields=["user", "seen_at"], name="user_stream_live")]

    def __str__(self) -> str:
        return self.client_id
