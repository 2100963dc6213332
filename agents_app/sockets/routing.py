"""WebSocket routes (mounted by ``studio.asgi`` behind ``consumers.websocket_auth``)."""

from __future__ import annotations

from django.urls import re_path

from agents_app.sockets.bridge_consumer import ThreadBridgeConsumer
from agents_app.sockets.consumers import (
    NotFoundConsumer,
    RegistryConsumer,
    ThreadLogsConsumer,
    ThreadStreamConsumer,
)
from agents_app.sockets.user_stream import UserStreamConsumer

websocket_urlpatterns = [
    re_path(r"^api/threads/(?P<thread_id>[^/]+)/stream$", ThreadStreamConsumer.as_asgi()),
    re_path(r"^api/threads/(?P<thread_id>[^/]+)/logs$", ThreadLogsConsumer.as_asgi()),
    re_path(r"^api/threads/(?P<thread_id>[^/]+)/bridge$", ThreadBridgeConsumer.as_asgi()),
    # The reference treats every other upgrade on a thread as its logs socket; its studio
    # opens this one.
    re_path(r"^api/threads/(?P<thread_id>[^/]+)$", ThreadLogsConsumer.as_asgi()),
    re_path(r"^api/events$", RegistryConsumer.as_asgi()),
    re_path(r"^api/users/me/stream$", UserStreamConsumer.as_asgi()),
    re_path(r"^api/users/(?P<user_id>[^/]+)/stream$", UserStreamConsumer.as_asgi()),
    re_path(r"", NotFoundConsumer.as_asgi()),
]
