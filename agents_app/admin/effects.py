"""Scheduled effects (the database is their source of truth; read-only here)."""

from __future__ import annotations

from django.contrib import admin

from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.models import ScheduledEffect


@admin.register(ScheduledEffect)
class ScheduledEffectAdmin(ReadOnlyAdmin):
    list_display = ("name", "thread", "status", "due_at", "tries", "manual_run", "completed_at")
    list_filter = ("status", "name", "manual_run")
    search_fields = ("name", "thread__id", "error")
    list_select_related = ("thread__agent",)
    date_hierarchy = "due_at"

    @admin.display(description="Attempts")
    def tries(self, obj: ScheduledEffect) -> str:
        return f"{obj.attempts} of {obj.max_attempts}"
