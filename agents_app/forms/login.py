"""The HTML sign-in forms (chat ``/login/`` and studio ``/admin/login/``) with the API's
sign-in limits: the same counters per client address and per account, in the shared cache.

A refused attempt re-renders the form with the reason and answers 429 with ``Retry-After``
(``mark_throttled`` on the view's response).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpResponse

from agents_app.base.errors import RateLimited
from agents_app.services.access import limits


class LimitedLoginMixin:
    """Counts each attempt before the password is checked; a success gives its count back."""

    request: Any
    cleaned_data: dict[str, Any]
    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if not username or not self.cleaned_data.get("password") or self.request is None:
            return super().clean()  # type: ignore[misc,no-any-return]
        try:
            attempt = limits.login_attempt(self.request, username)
        except RateLimited as exc:
            self.retry_after = exc.retry_after
            raise forms.ValidationError(exc.message, code="throttled") from None
        cleaned = super().clean()  # type: ignore[misc]  # raises on a failure: it stays counted
        attempt.refund()
        return cleaned  # type: ignore[no-any-return]


class ChatLoginForm(LimitedLoginMixin, AuthenticationForm):
    pass


class AdminLoginForm(LimitedLoginMixin, AdminAuthenticationForm):
    pass


def mark_throttled(response: HttpResponse) -> HttpResponse:
    """429 + ``Retry-After`` when the rendered login form was refused by a limit."""
    context = getattr(response, "context_data", None) or {}
    wait = getattr(context.get("form"), "retry_after", None)
    if wait:
        response.status_code = 429
        response["Retry-After"] = str(wait)
    return response
