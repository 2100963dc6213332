"""Env values: the instance/user page, inlines on prompts, agents, users and threads.

Secrets are write-only. No page shows a secret's plaintext or its ciphertext: the
value is typed into ``value_input`` (a form field, not the model's ``value``
property) and shown back only as "set" / "not set"; text values are shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.forms import BaseModelFormSet
from django.http import HttpRequest
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.timezone import localtime

from agents_app.base.encryption import DecryptionError
from agents_app.forms import (
    AgentEnvValueForm,
    EnvValueAdminForm,
    EnvValueFormSet,
    PromptEnvValueForm,
    UserEnvValueForm,
)
from agents_app.forms.definition_check import release_unique_values
from agents_app.models import EnvValue
from agents_app.services.automation import offboarding


def value_display(env: EnvValue) -> str:
    """A text value as is; a secret only as whether it is set."""
    if env.value_type == EnvValue.Type.TEXT:
        try:
            return env.value
        except DecryptionError:
            return "(cannot be decrypted: its encryption key is missing)"
    return format_html(
        '<span class="studio-status studio-status-{}">{}</span>',
        "set" if env.ciphertext else "unset",
        "secret is set" if env.ciphertext else "secret is not set",
    )


def value_status(env: EnvValue) -> str:
    """Set / not set, and who changed it when (never the value itself)."""
    if env.pk is None:
        return "–"
    state = "set" if env.ciphertext else "unset"
    who = env.updated_by.get_username() if env.updated_by else "an import or the engine"
    return format_html(
        '<span class="studio-status studio-status-{}">{}</span> · changed by {} on {}',
        state,
        "set" if env.ciphertext else "not set",
        who,
        date_format(localtime(env.updated_at), "DATETIME_FORMAT"),
    )


def secret_masker() -> Callable[[str], str]:
    """A function that hides the plaintext of every stored secret in a text.

    Prompts can insert env values into the system prompt, so engine logs may hold a
    secret; pages that show log bodies pass them through this first.
    """
    secrets: set[str] = set()
    for env in EnvValue.objects.filter(value_type=EnvValue.Type.SECRET).only("ciphertext"):
        try:
            plain = env.value
        except DecryptionError:
            continue
        if len(plain) >= 4:  # masking "a" everywhere would hide more than it protects
            # Also as it appears inside JSON text (quotes and backslashes escaped).
            secrets.update({plain, json.dumps(plain, ensure_ascii=False)[1:-1]})
    ordered = sorted(secrets, key=len, reverse=True)

    def mask(text: str) -> str:
        for plain in ordered:
            text = text.replace(plain, "[secret]")
        return text

    return mask


def stamp_changed_rows(request: HttpRequest, formset: BaseModelFormSet) -> None:
    """Save an env inline, recording who changed each row that changed."""
    release_unique_values(formset, "key")
    for obj in formset.save(commit=False):
        obj.updated_by_id = request.user.pk
        obj.save()
    for obj in formset.deleted_objects:
        obj.delete()
    formset.save_m2m()


class EnvInline(admin.TabularInline):
    """Only the rows of one scope; the value field left out when the page is view-only."""

    model = EnvValue
    formset = EnvValueFormSet
    extra = 0
    scope: str
    fields = ("key", "value_type", "value_input", "status")

    def get_queryset(self, request: HttpRequest) -> QuerySet[EnvValue]:
        return super().get_queryset(request).filter(scope=self.scope).select_related("updated_by")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if not self.has_change_permission(request, obj):
            return ("key", "value_type", "shown_value")
        return self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("status", "shown_value")

    @admin.display(description="Stored value")
    def status(self, env: EnvValue) -> str:
        return value_status(env)

    @admin.display(description="Value")
    def shown_value(self, env: EnvValue) -> str:
        return value_display(env)


class PromptEnvValueInline(EnvInline):
    fk_name = "prompt"
    form = PromptEnvValueForm
    scope = EnvValue.Scope.PROMPT
    verbose_name = "prompt env value"
    verbose_name_plural = "Env values of this prompt (used when nothing closer sets them)"


class AgentEnvValueInline(EnvInline):
    fk_name = "agent"
    form = AgentEnvValueForm
    scope = EnvValue.Scope.AGENT
    verbose_name = "agent env value"
    verbose_name_plural = "Env values of this agent"


class UserEnvValueInline(EnvInline):
    fk_name = "user"
    form = UserEnvValueForm
    scope = EnvValue.Scope.USER
    verbose_name = "user env value"
    verbose_name_plural = "Env values of this user (used by their threads)"


class ThreadEnvValueInline(EnvInline):
    """Thread values are set by the engine and the API; the thread page only shows them."""

    fk_name = "thread"
    scope = EnvValue.Scope.THREAD
    can_delete = False
    verbose_name = "thread env value"
    verbose_name_plural = "Env values of this thread"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EnvOwnerAdminMixin:
    """For admins with an env inline: stamp ``updated_by`` on the rows that changed."""

    def save_formset(
        self, request: HttpRequest, form: Any, formset: BaseModelFormSet, change: bool
    ) -> None:
        if formset.model is EnvValue:
            stamp_changed_rows(request, formset)
        else:
            super().save_formset(request, form, formset, change)  # type: ignore[misc]


@admin.register(EnvValue)
class EnvValueAdmin(admin.ModelAdmin):
    empty_help = (
        "No env values yet. Env values are named settings that prompts and tools read: an "
        "API key (kept encrypted, never shown again), a company name. Set one for the whole "
        "instance here; an agent's or a prompt's own values are on its page, a user's on "
        "their user page."
    )
    form = EnvValueAdminForm
    list_display = (
        "key",
        "scope",
        "owner",
        "value_type",
        "shown_value",
        "updated_by",
        "updated_at",
    )
    list_filter = ("scope", "value_type")
    search_fields = ("key", "user__username", "agent__name", "prompt__name")
    list_select_related = ("user", "agent", "prompt", "thread__agent", "updated_by")
    add_fields = ("scope", "user", "key", "value_type", "value_input")
    change_fields = ("scope", "owner", "key", "value_type", "value_input", "status")
    view_fields = ("scope", "owner", "key", "value_type", "shown_value", "status")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return self.add_fields
        return self.change_fields if self.has_change_permission(request, obj) else self.view_fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Moving a value to another scope or owner is a delete and an add, not an edit.
        return ("scope", "owner", "status", "shown_value") if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: EnvValue, form: Any, change: bool) -> None:
        if form.has_changed():
            obj.updated_by_id = request.user.pk
        super().save_model(request, obj, form, change)

    @admin.display(description="Belongs to")
    def owner(self, env: EnvValue) -> str:
        if env.scope == EnvValue.Scope.INSTANCE:
            return "everyone"
        owner = getattr(env, env.scope, None)
        return str(owner) if owner is not None else "–"

    @admin.display(description="Value")
    def shown_value(self, env: EnvValue) -> str:
        return value_display(env)

    @admin.display(description="Stored value")
    def status(self, env: EnvValue) -> str:
        return value_status(env)


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class StudioUserAdmin(EnvOwnerAdminMixin, UserAdmin):
    """Django's user admin plus the user's own env values ("my variables"); deactivating a
    user says what of theirs stopped (``services.automation.offboarding``)."""

    inlines = [UserEnvValueInline]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "is_active" in form.changed_data and not obj.is_active:
            stopped = offboarding.stopped_of(obj)
            self.message_user(request, stopped.sentence(obj.get_username()), messages.WARNING)
