"""What the sign-in pages (the chat's and the studio's) show of the identity provider."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from agents_app.services.access import identity


def studio_oidc(request: HttpRequest) -> dict[str, Any]:
    """``studio_oidc``: whether "Sign in with …" is offered, the provider's name, and
    whether the password form is hidden (``STUDIO_OIDC_ONLY``; ``?password=1`` shows the
    studio's form anyway, the break-glass way in for the administrator)."""
    enabled = identity.oidc_enabled()
    return {
        "studio_oidc": {
            "enabled": enabled,
            "name": identity.provider_name(),
            "only": enabled and settings.STUDIO_OIDC_ONLY and request.GET.get("password") != "1",
        }
    }
