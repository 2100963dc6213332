"""Admins for rows the engine writes (messages, logs, sessions, …): look, never touch."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from agents_app.admin.display import json_block


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable, searchable and filterable; never added, edited or deleted by hand.

    Editing these rows behind the engine's back would break the invariants it relies
    on (message order, session ownership, effect claims).
    """

    list_per_page = 50
    # Whether an operator may delete rows (with everything that cascades from them).
    deletable = False

    def __init__(self, model: Any, admin_site: Any) -> None:
        super().__init__(model, admin_site)
        # A stored JSON record (a message's metadata, a session's progress) is shown as a code
        # block on the detail page, never as running text a person is meant to read.
        self._json_fields = {
            f.name: f"{f.name}_as_json"
            for f in model._meta.fields
            if isinstance(f, models.JSONField) and not hasattr(self, f"{f.name}_as_json")
        }
        for name, shown in self._json_fields.items():
            setattr(self, shown, self._json_display(name))

    def _json_display(self, name: str) -> Any:
        def shown(obj: Any) -> str:
            return json_block(getattr(obj, name))

        shown.short_description = self.model._meta.get_field(name).verbose_name  # type: ignore[attr-defined]
        return shown

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_fields(request, obj)
        shown = [self._json_fields.get(f, f) if isinstance(f, str) else f for f in fields]
        return list(dict.fromkeys(shown))  # the JSON ones are also among the read-only fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*super().get_readonly_fields(request, obj), *self._json_fields.values())

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
