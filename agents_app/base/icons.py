"""Agent icons as the API returns them (agents-spec §8.2).

A definition's icon is an http(s) URL, used as-is, or an absolute path on this site
(``/icons/support.svg``), which the API returns as a full URL. The origin is
``STUDIO_PUBLIC_URL`` when set (the only choice for WebSocket frames, which are
broadcast to many clients and have no request of their own), else the origin of the
HTTP request being answered (Django's ``build_absolute_uri``, which honours
``ALLOWED_HOSTS`` and ``SECURE_PROXY_SSL_HEADER``).
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def configured_origin() -> str | None:
    """``STUDIO_PUBLIC_URL`` without a trailing slash, or None when unset."""
    origin: str = getattr(settings, "STUDIO_PUBLIC_URL", "") or ""
    return origin.rstrip("/") or None


def request_origin(request: HttpRequest) -> str:
    """The origin icons are made absolute against when answering ``request``."""
    return configured_origin() or request.build_absolute_uri("/").rstrip("/")


def icon_url(icon: str | None, origin: str | None) -> str | None:
    """``icon`` as a full URL: absolute paths are joined to ``origin``, URLs kept."""
    if not icon:
        return None
    if icon.startswith("/") and not icon.startswith("//") and origin:
        return origin + icon
    return icon
