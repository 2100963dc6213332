"""Credential grants in the studio: list, add, change and delete, never the secret.

Saves and deletes go through ``services.users.grants`` (``grant_put``, ``grant_delete``),
the functions behind ``/api/grants`` and ``/api/users/…/grants``: one rule, two doors
(``forms.grants``). The permissions are the API's (``*_credentialgrant``). No page shows the
secret: the list and change pages show where it goes and who may use it; the ciphertext is
not a field of any form or display.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.timezone import localtime

from agents_app.forms.grants import ALLOW_FIELDS, CredentialGrantForm
from agents_app.models import CredentialGrant
from agents_app.services.users import grants


def who_may_use(grant: CredentialGrant) -> str:
    """ "tools: crm_lookup · user endpoints: any", or "nobody" (no ``allow``)."""
    allow = (grant.config or {}).get("allow") or {}
    parts = []
    for field, (kind, _) in ALLOW_FIELDS.items():
        names = allow.get(kind) or []
        if names:
            label = CredentialGrantForm.base_fields[field].label or kind
            shown = ", ".join("any" if n == "*" else n for n in names)
            parts.append(f"{str(label).lower()}: {shown}")
    return " · ".join(parts) or "nobody"


@admin.register(CredentialGrant)
class CredentialGrantAdmin(admin.ModelAdmin):
    empty_help = (
        "No credential grants yet. A grant lends a credential (an API token, a password) to "
        "your tools and endpoints without showing it to them: the platform puts it into "
        "requests to the origins you list, for the code you allow. Add one for the whole "
        "instance or for one person."
    )
    form = CredentialGrantForm
    list_display = ("name", "kind", "origins", "may_use", "owner", "updated_by", "updated_at")
    list_filter = ("kind",)
    search_fields = ("name", "user__username")
    list_select_related = ("user", "updated_by")
    where = ("kind", "origins", "inject_header", "inject_prefix", "inject_param", "inject_username")
    who = ("allow_tools", "allow_endpoints", "allow_user_endpoints")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and not self.has_change_permission(request, obj):
            return [(None, {"fields": ("owner", "name", "kind", "origins", "may_use", "changed")})]
        first = (
            ("user", "name", "secret") if obj is None else ("owner", "name", "secret", "changed")
        )
        return [
            (None, {"fields": first}),
            ("Where it may be sent, and how", {"fields": self.where}),
            (
                "Who may use it",
                {
                    "fields": self.who,
                    "description": "Tick the code that may ask for this grant "
                    "(state.fetch). Nothing ticked: nobody may use it.",
                },
            ),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ()
        if not self.has_change_permission(request, obj):
            return ("owner", "name", "kind", "origins", "may_use", "changed")
        # Another owner or name is another grant: delete this one and add that.
        return ("owner", "name", "changed")

    def save_model(
        self, request: HttpRequest, obj: CredentialGrant, form: Any, change: bool
    ) -> None:
        arguments = form.grant_put_arguments()
        grants.grant_put(**arguments, actor=request.user)
        saved = CredentialGrant.objects.get(user_id=arguments["user_id"], name=arguments["name"])
        # The admin logs and redirects with ``obj``: it becomes the row the service wrote.
        obj.pk, obj.user_id, obj.name = saved.pk, saved.user_id, saved.name
        obj._state.adding = False

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None  # a grant has no related rows; ``save_model`` wrote everything

    def delete_model(self, request: HttpRequest, obj: CredentialGrant) -> None:
        grants.grant_delete(user_id=obj.user_id, name=obj.name)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[CredentialGrant]) -> None:
        for grant in queryset:
            grants.grant_delete(user_id=grant.user_id, name=grant.name)

    @admin.display(description="Belongs to", ordering="user__username")
    def owner(self, grant: CredentialGrant) -> str:
        return str(grant.user) if grant.user_id else "instance"

    @admin.display(description="Origins")
    def origins(self, grant: CredentialGrant) -> str:
        listed = (grant.config or {}).get("origins") or []
        return format_html_join(mark_safe("<br>"), "{}", ((o,) for o in listed))  # noqa: S308

    @admin.display(description="Who may use it")
    def may_use(self, grant: CredentialGrant) -> str:
        return who_may_use(grant)

    @admin.display(description="Changed")
    def changed(self, grant: CredentialGrant) -> str:
        who = grant.updated_by.get_username() if grant.updated_by else "code or an import"
        return format_html(
            "by {} on {}", who, date_format(localtime(grant.updated_at), "DATETIME_FORMAT")
        )
