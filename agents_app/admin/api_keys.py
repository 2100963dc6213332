"""API keys and WebSocket tickets. Key hashes and ticket hashes are never shown."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.models import ApiKey, WebSocketTicket
from agents_app.services.access.api_keys import ApiKeyNameInvalid, api_key_create, api_key_revoke


class ApiKeyAddForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="What the key is for, so you know which to revoke later."
    )
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        help_text="The key acts as this user: it sees and may do what they may.",
    )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created here (Add: the key is shown once) or through the API; rename, revoke."""

    empty_help = (
        "No API keys yet. An API key lets a program (a script, another service) use the API "
        "as a user. Add one: the key is shown once, right after, so copy it then."
    )

    list_display = ("name", "user", "masked", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "user__username", "last_five")
    list_select_related = ("user",)
    fields = ("name", "user", "masked", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "masked", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        # Not the model form: the raw key exists only in this response, shown once and never
        # stored (not in a message cookie either).
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiKeyAddForm(request.POST or None, initial={"user": request.user.pk})
        raw = None
        if request.method == "POST" and form.is_valid():
            try:
                _, raw = api_key_create(
                    user=form.cleaned_data["user"], name=form.cleaned_data["name"]
                )
            except ApiKeyNameInvalid as exc:
                form.add_error("name", str(exc))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Add API key",
            "form": form,
            "raw_key": raw,
        }
        response = TemplateResponse(request, "admin/agents_app/apikey/add.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.display(description="Key")
    def masked(self, obj: ApiKey) -> str:
        return f"{obj.key_prefix}…{obj.last_five}"

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        active = list(queryset.filter(revoked_at__isnull=True))
        for key in active:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {len(active)} key(s).", messages.SUCCESS)


@admin.register(WebSocketTicket)
class WebSocketTicketAdmin(ReadOnlyAdmin):
    list_display = ("pathname", "user", "created_at", "expires_at", "used_at")
    search_fields = ("pathname", "user__username")
    list_select_related = ("user",)
    fields = ("pathname", "user", "created_at", "expires_at", "used_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.fields
