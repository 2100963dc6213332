"""The thread inspector's conversation tree (issue #41): the tree beside the messages, and a
button that makes another version the active path (``services.threads.branches.active_set``, as
``PUT /api/threads/{id}/active`` does; refused while a session runs).

A mixin for the thread ModelAdmin placed before ``ThreadActionsMixin``, whose ``_wrap``
(permission, POST only, admin messages) the switch uses.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import path

from agents_app.admin.change_context import ChangeContextMixin
from agents_app.models import Thread
from agents_app.pages.branches_view import tree_view
from agents_app.services.threads import branches


def _activate(request: HttpRequest, thread: Thread, message_id: Any) -> str:
    path_ids = branches.active_set(thread=thread, message_id=str(message_id))
    return f"Switched versions: the active path now has {len(path_ids)} messages."


class ThreadBranchesMixin(ChangeContextMixin):
    admin_site: Any

    def get_urls(self) -> list[Any]:
        switch = path(
            "<uuid:object_id>/versions/<uuid:message_id>/activate/",
            self._wrap(_activate),  # type: ignore[attr-defined]
            name="agents_app_thread_version_activate",
        )
        return [switch, *super().get_urls()]  # type: ignore[misc]

    def change_context(self, request: HttpRequest, obj: Thread) -> dict[str, Any]:
        return {**super().change_context(request, obj), "tree": tree_view(obj)}  # type: ignore[misc]
