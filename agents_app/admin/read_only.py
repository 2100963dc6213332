"""Admins for rows the engine writes (messages, logs, sessions, …): look, never touch."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable, searchable and filterable; never added, edited or deleted by hand.

    Editing these rows behind the engine's back would break the invariants it relies
    on (message order, session ownership, effect claims).
    """

    list_per_page = 50
    # Whether an operator may delete rows (with everything that cascades from them).
    deletable = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.deletable and super().has_delete_permission(request, obj)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
