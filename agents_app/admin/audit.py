"""The audit log (read, filter, export as CSV) and SCIM tokens (docs/identity.md).

The audit log is readable only with its own permission (``agents_app.view_auditevent``):
being staff, or holding every other permission, shows nothing of it. Nobody adds, changes
or deletes an event here (the log is append-only; its retention deletes old events).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.models import AuditEvent, ScimToken
from agents_app.services.access import audit, scim


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "–"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def change_lines(changes: dict[str, Any]) -> list[tuple[str, str]]:
    """Each changed field as (name, "before → after") for the page."""
    lines = []
    for name, change in sorted((changes or {}).items()):
        if isinstance(change, list) and len(change) == 2:
            lines.append((name, f"{_shown(change[0])} → {_shown(change[1])}"))
        elif isinstance(change, dict) and "added" in change:
            parts = [f"+{n}" for n in change.get("added", [])] + [
                f"−{n}" for n in change.get("removed", [])
            ]
            lines.append((name, ", ".join(parts) or "–"))
        else:
            lines.append((name, _shown(change)))
    return lines


def _command_as_code(text: str) -> str:
    """A ``manage.py`` command (the actor or source of a change made from the shell) as code."""
    if text.startswith("manage.py"):
        return format_html("<code>{}</code>", text)
    return text or "–"


def _cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _coded(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each change's value: JSON (a definition's part) as code, plain values as they are."""
    return [
        (name, format_html("<code>{}</code>", v) if "{" in v or "[" in v else v)
        for name, v in lines
    ]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    empty_help = (
        "No changes recorded yet. Every change to agents, prompts, models, env values (names "
        "only), API keys, users, groups, permissions, budgets, schedules, triggers, webhooks "
        "and retention is listed here, with who made it and from where."
    )
    list_display = (
        "at",
        "shown_actor",
        "action",
        "target_type",
        "target",
        "summary",
        "shown_source",
    )
    list_filter = ("actor_kind", "action", "target_type", ("at", admin.DateFieldListFilter))
    search_fields = ("actor", "target", "target_id", "source")
    date_hierarchy = "at"
    fields = (
        "at",
        "actor_kind",
        "shown_actor",
        "shown_source",
        "action",
        "target_type",
        "target_id",
        "target",
        "changed",
    )
    list_per_page = 100
    show_full_result_count = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.fields

    # Its own permission only: Django's admin would also let ``change_auditevent`` read.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("agents_app.view_auditevent"))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    # An audit record names the stored fields exactly (what an auditor searches for): the
    # names, JSON values and commands are shown as code, not as the studio's own words.
    @admin.display(description="What changed")
    def summary(self, obj: AuditEvent) -> str:
        lines = change_lines(obj.changes)
        shown = [(n, _cut(v, 40)) for n, v in lines[:3]]
        more = "…" if len(lines) > 3 else ""
        return format_html(
            "{}{}", format_html_join("; ", "<code>{}</code>: {}", _coded(shown)), more
        )

    @admin.display(description="What changed")
    def changed(self, obj: AuditEvent) -> str:
        lines = change_lines(obj.changes)
        if not lines:
            return "–"
        return format_html(
            "<table class='audit-changes'><tbody>{}</tbody></table>",
            format_html_join("", "<tr><th><code>{}</code></th><td>{}</td></tr>", _coded(lines)),
        )

    @admin.display(description="Source", ordering="source")
    def shown_source(self, obj: AuditEvent) -> str:
        return _command_as_code(obj.source)

    @admin.display(description="Actor", ordering="actor")
    def shown_actor(self, obj: AuditEvent) -> str:
        return _command_as_code(obj.actor)

    def get_urls(self) -> list[URLPattern]:
        export = path(
            "export.csv",
            self.admin_site.admin_view(self.export_csv),
            name="agents_app_auditevent_export",
        )
        return [export, *super().get_urls()]

    def export_csv(self, request: HttpRequest) -> HttpResponse:
        """The events the list's filters select, as CSV (no cell a spreadsheet runs)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        rows = self.get_changelist_instance(request).get_queryset(request)
        response = HttpResponse(audit.export_csv(rows.iterator()), content_type="text/csv")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
        response["Cache-Control"] = "no-store"
        return response


class ScimTokenAddForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="Which provisioning client uses it (\u201cOkta\u201d, \u201cEntra ID\u201d).",
    )


@admin.register(ScimToken)
class ScimTokenAdmin(admin.ModelAdmin):
    """Tokens for SCIM clients: created here (shown once), revoked here."""

    empty_help = (
        "No SCIM tokens yet. Your identity provider's provisioning (SCIM 2.0) needs the base "
        "URL /scim/v2/ and a token: add one, and copy it when it is shown (only then)."
    )
    list_display = ("name", "masked", "created_by", "created_at", "last_used_at", "revoked_at")
    fields = ("name", "masked", "created_by", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("masked", "created_by", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked, never deleted: the audit log names them

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ScimTokenAddForm(request.POST or None)
        raw = None
        if request.method == "POST" and form.is_valid():
            _, raw = scim.token_create(name=form.cleaned_data["name"], by=request.user)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Add SCIM token",
            "form": form,
            "raw_token": raw,
            "scim_base": request.build_absolute_uri("/scim/v2/"),
        }
        response = TemplateResponse(request, "admin/agents_app/scimtoken/add.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.display(description="Token")
    def masked(self, obj: ScimToken) -> str:
        return f"{scim.TOKEN_PREFIX}…{obj.last_four}"

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ScimToken]) -> None:
        count = 0
        for row in queryset.filter(revoked_at__isnull=True):
            row.revoked_at = timezone.now()
            row.save(update_fields=["revoked_at"])
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
