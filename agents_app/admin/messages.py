"""Messages and queued messages (written by the engine; read-only here)."""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin

from agents_app.admin.display import excerpt, from_us, verbatim
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.admin.threads import tool_summary
from agents_app.models import Message, QueuedMessage


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("when", "thread", "role", "side", "text", "tools", "status", "depth")
    list_filter = ("role", "status", "side", "silent", "tool_status")
    search_fields = ("content", "name", "thread__id", "prompt_name")
    list_select_related = ("thread__agent",)
    readonly_fields = ("when",)

    @admin.display(description="When", ordering="created_at")
    def when(self, obj: Message) -> datetime | None:
        return from_us(obj.created_at)

    @admin.display(description="Content")
    def text(self, obj: Message) -> str:
        return verbatim(excerpt(obj.content, 100))

    @admin.display(description="Tool")
    def tools(self, obj: Message) -> str:
        return tool_summary(obj)


@admin.register(QueuedMessage)
class QueuedMessageAdmin(ReadOnlyAdmin):
    list_display = ("when", "thread", "role", "text", "silent")
    list_filter = ("role", "silent")
    search_fields = ("content", "thread__id")
    list_select_related = ("thread__agent",)
    readonly_fields = ("when",)

    @admin.display(description="Queued at", ordering="created_at")
    def when(self, obj: QueuedMessage) -> datetime | None:
        return from_us(obj.created_at)

    @admin.display(description="Content")
    def text(self, obj: QueuedMessage) -> str:
        return verbatim(excerpt(obj.content, 100))
