"""Automation people own (schedules, triggers, webhook subscriptions) in the studio.

Each row acts as its owner (``services.automation.owner_rights``): a person sees and manages their own;
holders of the kind's ``manage_others_…`` permission see everyone's and may hand a row to
someone else (the Owner field, which only they can change: ``services.automation.offboarding.hand_over``
says what a hand-over resets). The agent picker offers what the person may use, as the chat
does."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.selectors import agents_for
from agents_app.services.automation import offboarding, owner_rights


class OwnedAdminMixin:
    """For a ``ModelAdmin`` of a model with an ``owner``; ``owned_kind`` names its
    permission (``schedule``, ``trigger``, ``webhooksubscription``)."""

    owned_kind: str = ""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request)  # type: ignore[misc]
        return owner_rights.managed_by(request.user, self.owned_kind, rows)  # type: ignore[no-any-return]

    def manages_others(self, request: HttpRequest) -> bool:
        return request.user.has_perm(owner_rights.MANAGE_OTHERS[self.owned_kind])

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))  # type: ignore[misc]
        if obj is not None and self.manages_others(request) and "owner" in fields:
            fields.remove("owner")  # the hand-over
        return fields

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "agent":
            kwargs["queryset"] = agents_for(request.user).order_by("name")
        elif db_field.name == "owner":
            kwargs["queryset"] = get_user_model().objects.filter(is_active=True)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def handed_over(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> bool:
        """Apply a hand-over chosen on the form (before the save); whether there was one."""
        if not change or "owner" not in getattr(form, "changed_data", ()):
            return False
        offboarding.hand_over(obj, obj.owner, request.user)
        self.message_user(  # type: ignore[attr-defined]
            request, f"{obj} now belongs to {obj.owner.get_username()}.", messages.SUCCESS
        )
        return True

    @admin.display(description="Stopped because")
    def stopped_because(self, obj: Any) -> str:
        return getattr(obj, "paused_reason", "") or getattr(obj, "disabled_reason", "") or "—"
