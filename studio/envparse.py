"""Strict helpers to read settings from the environment (12-factor).

``X_FILE`` variants let secrets come from mounted files (Docker/Kubernetes secrets).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def envstr(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        with open(file_path, encoding="utf-8") as fh:
            return fh.read().strip()
    return os.environ.get(name, default)


def envbool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from exc


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in envstr(name, default).split(",") if item.strip()]


def envheader(name: str) -> str | None:
    """An HTTP header name (``X-Forwarded-Proto``) as its WSGI ``META`` key, or ``None``."""
    raw = envstr(name).strip()
    if not raw:
        return None
    if not all(c.isalnum() or c == "-" for c in raw):
        raise ImproperlyConfigured(
            f"{name} must be a header name like X-Forwarded-Proto, got {raw!r}"
        )
    return "HTTP_" + raw.upper().replace("-", "_")
