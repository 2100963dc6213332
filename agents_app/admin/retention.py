"""The retention page: one policy row, edited in place; what is in effect and the last run.

There is no list and no "add": the changelist opens the single row. Each period left
empty follows the server's ``STUDIO_RETENTION_*`` setting, shown next to it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from agents_app.models import RetentionPolicy
from agents_app.services.operations.retention import (
    Policy,
    effective_policy,
    policy_problems,
    policy_row,
    settings_policy,
)

LABELS = {
    "thread_days": "Threads",
    "log_days": "Logs",
    "log_body_days": "Log bodies",
    "effect_days": "Finished effects",
    "memory_days": "Memories about people",
}


class RetentionPolicyForm(forms.ModelForm):
    class Meta:
        model = RetentionPolicy
        fields = list(LABELS)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors:
            row = RetentionPolicy(**{name: data.get(name) for name in LABELS})
            problems = policy_problems(effective_policy(row))
            if problems:
                raise forms.ValidationError(problems)
        return data


def _days(n: int) -> str:
    return "kept forever" if n == 0 else f"{n} day{'s' if n != 1 else ''}"


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(admin.ModelAdmin):
    form = RetentionPolicyForm
    fieldsets = (
        (
            "Periods (empty: the server setting; 0: keep forever)",
            {"fields": (*LABELS, "in_effect")},
        ),
        ("Last run", {"fields": ("last_run_at", "last_run_summary")}),
    )
    readonly_fields = ("in_effect", "last_run_at", "last_run_summary")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        row = policy_row()
        return HttpResponseRedirect(
            reverse("admin:agents_app_retentionpolicy_change", args=[row.pk])
        )

    @admin.display(description="In effect")
    def in_effect(self, obj: RetentionPolicy) -> str:
        current, server = effective_policy(obj), settings_policy()
        rows = [
            (
                LABELS[name],
                _days(getattr(current, name)),
                "this page" if getattr(obj, name) is not None else "server setting",
                _days(getattr(server, name)),
            )
            for name in Policy.__dataclass_fields__
        ]
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        return format_html(
            "<table><tr><th>Kind</th><th>Kept</th><th>From</th><th>Server setting</th></tr>"
            "{}</table>",
            body,
        )
