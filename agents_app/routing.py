"""WebSocket routes (mounted by ``studio.asgi`` behind ``consumers.websocket_auth``)."""

from __future__ import annotations

from django.urls import re_path

from agents_app.consumers import (
    NotFoundConsumer,
    RegistryConsumer,
    ThreadLogsConsumer,
    ThreadStreamConsumer,
)

websocket_urlpatterns = [
    re_path(r"^api/threads/(?P<thread_id>[^/]+)/stream$", ThreadStreamConsumer.as_asgi()),
    re_path(r"^api/threads/(?P<thread_id>[^/]+)/logs$", ThreadLogsConsumer.as_asgi()),
    re_path(r"^api/events$", RegistryConsumer.as_asgi()),
    re_path(r"", NotFoundConsumer.as_asgi()),
]
