"""Threads and the state the engine keeps for them: sessions, values and files (read-only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from agents_app.admin.display import excerpt, from_us, json_block, json_excerpt, short_id
from agents_app.admin.env import ThreadEnvValueInline
from agents_app.admin.log_filters import StopReasonFilter
from agents_app.admin.read_only import ReadOnlyAdmin, ReadOnlyInline
from agents_app.admin.thread_actions import ThreadActionsMixin
from agents_app.admin.thread_branches import ThreadBranchesMixin
from agents_app.admin.thread_live import ThreadLiveInspectorMixin
from agents_app.base.people_format import local_time, reason, worker
from agents_app.models import (
    Message,
    Thread,
    ThreadFile,
    ThreadFileChunk,
    ThreadSession,
    ThreadValue,
)
from agents_app.pages.thread_inspector import thread_inspection
from agents_app.services.threads.changes import thread_delete


def tool_summary(obj: Message) -> str:
    if obj.tool_calls:
        names = [
            c.get("function", {}).get("name", "?") for c in obj.tool_calls if isinstance(c, dict)
        ]
        return "calls " + ", ".join(names)
    if obj.role == Message.Role.TOOL:
        return f"{obj.name or 'result'} ({obj.tool_status or 'done'})"
    return ""


class SessionInline(ReadOnlyInline):
    model = ThreadSession
    fields = ("status", "side", "shown_owner", "shown_stop_reason", "shown_started", "shown_ended")
    readonly_fields = fields
    verbose_name_plural = "Sessions (autonomous runs)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ThreadSession]:
        return super().get_queryset(request).order_by("-created_at")

    @admin.display(description="Run by")
    def shown_owner(self, obj: ThreadSession) -> str:
        return worker(obj.owner)

    @admin.display(description="Why it ended")
    def shown_stop_reason(self, obj: ThreadSession) -> str:
        return reason(obj.stop_reason)

    @admin.display(description="Started")
    def shown_started(self, obj: ThreadSession) -> str:
        return local_time(obj.created_at)

    @admin.display(description="Ended")
    def shown_ended(self, obj: ThreadSession) -> str:
        return local_time(obj.ended_at)


@admin.register(Thread)
class ThreadAdmin(ThreadBranchesMixin, ThreadLiveInspectorMixin, ThreadActionsMixin, ReadOnlyAdmin):
    """The thread inspector: the change page shows the conversation, its logs, cost,
    effects, values, files and env (``pages.thread_inspector``), with stop, continue
    and delete (``services.sessions.lifecycle``, ``services.threads.changes``); "Open live" leads to the live
    inspector (``thread_live``), where the conversation and its requests stream in."""

    inlines = [SessionInline, ThreadEnvValueInline]
    change_form_template = "admin/agents_app/thread/inspector.html"
    list_display = (
        "short",
        "live",
        "agent",
        "owner",
        "child_of",
        "stopped",
        "preview",
        "last_activity_at",
        "created_at",
    )
    list_filter = ("agent", "stopped", "child_status", "created_at")
    search_fields = (
        "id",
        "display_name",
        "relationship",
        "last_message_preview",
        "owner__username",
        "agent__name",
    )
    list_select_related = ("agent", "owner", "parent__agent")
    date_hierarchy = "created_at"
    fieldsets = [
        (None, {"fields": ("id", "agent", "origin_agent", "owner", "tags", "all_messages")}),
        (
            "Status",
            {
                "fields": (
                    "stopped",
                    "terminated_at",
                    "created_at",
                    "last_activity_at",
                    "last_message_at",
                )
            },
        ),
        (
            "Subagent",
            {
                "classes": ("collapse",),
                "fields": (
                    "parent",
                    "display_name",
                    "relationship",
                    "child_status",
                    "subagent_config",
                ),
            },
        ),
        ("Engine state", {"classes": ("collapse",), "fields": ("execution_state",)}),
    ]
    readonly_fields = ("all_messages",)
    # Deleting a whole conversation (with its messages, logs and files) is an operator's call.
    deletable = True

    def change_context(self, request: HttpRequest, obj: Thread) -> dict[str, Any]:
        return {
            **super().change_context(request, obj),
            "inspection": thread_inspection(obj),
            "can_act": self.can_act(request),
            "is_dual": obj.agent.type == "dual_ai",
        }

    def delete_model(self, request: HttpRequest, obj: Thread) -> None:
        thread_delete(thread=obj)  # the subtree, its files' blobs, and the registry events

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Thread]) -> None:
        for thread in queryset:
            if Thread.objects.filter(pk=thread.pk).exists():  # a child of one deleted before
                thread_delete(thread=thread)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, _perms_needed, protected = super().get_deleted_objects(objs, request)
        # Messages, logs and sessions cannot be deleted one by one, but go with their thread.
        return deleted, counts, set(), protected

    @admin.display(description="Thread", ordering="id")
    def short(self, obj: Thread) -> str:
        return short_id(obj.id)

    @admin.display(description="Inspect")
    def live(self, obj: Thread) -> str:
        url = reverse("admin:agents_app_thread_inspect", args=[obj.pk])
        return format_html('<a href="{}">Open live</a>', url)

    @admin.display(description="Subagent of")
    def child_of(self, obj: Thread) -> str:
        if obj.parent is None:
            return ""
        return f"{obj.parent} as {obj.display_name or obj.relationship or 'child'}"

    @admin.display(description="Last message")
    def preview(self, obj: Thread) -> str:
        return excerpt(obj.last_message_preview, 60)

    @admin.display(description="Messages")
    def all_messages(self, obj: Thread) -> str:
        url = reverse("admin:agents_app_message_changelist") + f"?thread__id__exact={obj.pk}"
        return format_html('<a href="{}">All {} messages</a>', url, obj.messages.count())


@admin.register(ThreadSession)
class ThreadSessionAdmin(ReadOnlyAdmin):
    list_display = (
        "short",
        "thread",
        "status",
        "side",
        "shown_owner",
        "shown_stop_reason",
        "shown_started",
        "shown_ended",
    )
    list_filter = ("status", StopReasonFilter, "side")
    search_fields = ("id", "thread__id", "owner", "stop_reason")
    list_select_related = ("thread__agent",)
    ordering = ("-created_at",)
    # The session's page: its fields in words; the progress record is a code block (what the
    # engine stored, for whoever debugs it), never running text.
    fields = (
        "thread",
        "status",
        "side",
        "shown_owner",
        "shown_stop_reason",
        "error",
        "shown_started",
        "shown_ended",
        "shown_progress",
        "shown_versions",
    )
    readonly_fields = fields

    @admin.display(description="Progress (as the engine stored it)")
    def shown_progress(self, obj: ThreadSession) -> str:
        return json_block(obj.progress)

    @admin.display(description="Definition versions it ran on")
    def shown_versions(self, obj: ThreadSession) -> str:
        return json_block(obj.definition_versions)

    @admin.display(description="Session", ordering="id")
    def short(self, obj: ThreadSession) -> str:
        return short_id(obj.id)

    @admin.display(description="Run by", ordering="owner")
    def shown_owner(self, obj: ThreadSession) -> str:
        return worker(obj.owner)

    @admin.display(description="Why it ended", ordering="stop_reason")
    def shown_stop_reason(self, obj: ThreadSession) -> str:
        return reason(obj.stop_reason) if obj.stop_reason else "–"

    @admin.display(description="Started", ordering="created_at")
    def shown_started(self, obj: ThreadSession) -> str:
        return local_time(obj.created_at)

    @admin.display(description="Ended", ordering="ended_at")
    def shown_ended(self, obj: ThreadSession) -> str:
        return local_time(obj.ended_at)


@admin.register(ThreadValue)
class ThreadValueAdmin(ReadOnlyAdmin):
    list_display = ("key", "thread", "shown", "updated")
    search_fields = ("key", "thread__id")
    list_select_related = ("thread__agent",)

    @admin.display(description="Value")
    def shown(self, obj: ThreadValue) -> str:
        return json_excerpt(obj.value)

    @admin.display(description="Updated", ordering="updated_at")
    def updated(self, obj: ThreadValue) -> datetime | None:
        return from_us(obj.updated_at)


class ChunkInline(ReadOnlyInline):
    model = ThreadFileChunk
    fields = ("index", "size", "stored_as")
    readonly_fields = fields
    show_change_link = False

    @admin.display(description="Stored as")
    def stored_as(self, obj: ThreadFileChunk) -> str:
        return obj.blob.name or ""


@admin.register(ThreadFile)
class ThreadFileAdmin(ReadOnlyAdmin):
    inlines = [ChunkInline]
    list_display = ("path", "thread", "mime_type", "size", "is_directory", "updated_at")
    list_filter = ("is_directory", "is_chunked", "mime_type")
    search_fields = ("path", "name", "thread__id")
    list_select_related = ("thread__agent",)
    # The blob fields are not shown as Django's storage links (MEDIA_URL, served by whatever
    # fronts it, without our headers): "content" opens the bytes through the API route,
    # which serves user files inert (agents_app/api/file_responses.py).
    fields = (
        "thread",
        "path",
        "name",
        "mime_type",
        "is_directory",
        "size",
        "content",
        "is_chunked",
        "chunk_count",
        "width",
        "height",
        "metadata",
        "created_at",
        "updated_at",
    )
    readonly_fields = ("content",)

    @admin.display(description="Content")
    def content(self, obj: ThreadFile) -> str:
        if obj.is_directory:
            return "–"
        url = f"/api/threads/{obj.thread_id}/fs{quote(obj.path)}"
        return format_html('<a href="{}" rel="noopener noreferrer">open</a>', url)
