"""Django's host and origin rules for ASGI apps that run in front of Django (``/mcp``).

``ALLOWED_HOSTS`` applies to the ``Host`` header exactly as Django applies it (through
``X-Forwarded-Host`` when ``USE_X_FORWARDED_HOST`` is on; the localhost names when
``DEBUG`` runs with an empty list). A browser's ``Origin`` must be the request's own host
or one of ``CSRF_TRUSTED_ORIGINS`` (``https://*.example.com`` matching subdomains, as
Django's CSRF check does): a page on another site, or a DNS-rebound name, is refused. No
``Origin`` at all is a non-browser client, which is fine.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

_DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]


def scope_headers(scope: dict[str, object]) -> dict[str, str]:
    raw = scope.get("headers") or []
    return {k.decode("latin1").lower(): v.decode("latin1") for k, v in raw}  # type: ignore[attr-defined]


def request_host(headers: dict[str, str]) -> str:
    if settings.USE_X_FORWARDED_HOST and headers.get("x-forwarded-host"):
        return headers["x-forwarded-host"].split(",")[0].strip()
    return headers.get("host", "")


def host_allowed(host: str) -> bool:
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = _DEBUG_HOSTS
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def origin_allowed(origin: str | None, host: str) -> bool:
    if not origin:
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # "null" (a sandboxed page, a file) and anything else unparseable
    if parts.netloc == host:
        return True
    return any(
        "*" in wanted.netloc
        and wanted.scheme == parts.scheme
        and is_same_domain(parts.netloc, wanted.netloc.replace("*", "", 1))
        for wanted in map(urlsplit, settings.CSRF_TRUSTED_ORIGINS)
    )
