"""One ``change_view`` for the admins whose change page shows more than the form.

Each mixin in an admin's MRO adds its part through ``change_context`` (cooperatively, with
``super()``), so the object is fetched once per page instead of once per mixin (the thread
inspector fetched its thread twice before Django's own fetch), and the override is written
once instead of in every admin.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse


class ChangeContextMixin:
    """Place it first among the bases that extend the change page's context."""

    def change_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        """What the change page shows beside the form, for ``obj`` (found and visible)."""
        return {}

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)  # type: ignore[attr-defined]
        extra = dict(extra_context or {})
        if obj is not None:
            extra.update(self.change_context(request, obj))
        return super().change_view(request, object_id, form_url, extra)  # type: ignore[misc,no-any-return]
