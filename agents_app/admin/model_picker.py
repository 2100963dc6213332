"""The model editor's picker and "Test connection": two JSON views over
``services.definitions.model_catalog``, and the widget that puts them beside the model id field.

The browser sends the provider, the (unsaved) base URL and a search; the server resolves
the key (the signed-in user's env value, the instance's, the process environment) and
asks the vendor, so the key never reaches the page. Only people who may add or change
model definitions can use either view: both spend the instance's key.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from agents_app.base.errors import DomainError
from agents_app.services.definitions import model_catalog


class ModelPickerWidget(forms.TextInput):
    """The model id input, with the picker and the test button (static/studio/model_picker.js)."""

    picker_template = "admin/agents_app/languagemodel/model_picker_widget.html"

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        # The plain input from Django's form renderer, wrapped by a project template (the
        # form renderer does not search the project's templates/ directory).
        context = {
            "input_html": super().render(name, value, attrs, renderer),
            "list_url": reverse("admin:agents_app_languagemodel_discover"),
            "test_url": reverse("admin:agents_app_languagemodel_test_connection"),
            "icon_url": "/api/providers/__name__/icon",
        }
        return mark_safe(render_to_string(self.picker_template, context))  # noqa: S308


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default


def discover_view(request: HttpRequest) -> JsonResponse:
    """``GET ?provider=&base_url=&search=&page=&refresh=``: a page of the provider's models."""
    query = request.GET
    try:
        page = model_catalog.provider_models_page(
            query.get("provider") or "",
            user=request.user,
            base_url=query.get("base_url"),
            search=query.get("search") or "",
            page=max(1, _int(query.get("page"), 1)),
            per_page=min(100, max(1, _int(query.get("per_page"), 25))),
            refresh=query.get("refresh") in ("1", "true"),
        )
    except DomainError as exc:
        return JsonResponse({"error": exc.message}, status=exc.status)
    return JsonResponse(page.dump())


def test_connection_view(request: HttpRequest) -> JsonResponse:
    """``POST provider, model, base_url``: one one-token request; ``{ok, message}``."""
    if request.method != "POST":
        return JsonResponse({"error": "Use POST."}, status=405)
    data = request.POST
    try:
        result = model_catalog.check_connection(
            data.get("provider") or "",
            data.get("model") or "",
            user=request.user,
            base_url=data.get("base_url"),
            api=data.get("api") or None,
        )
    except DomainError as exc:
        return JsonResponse({"ok": False, "message": exc.message}, status=exc.status)
    return JsonResponse(result)
