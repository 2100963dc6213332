"""Strict helpers to read settings from the environment (12-factor).

``X_FILE`` variants let secrets come from mounted files (Docker/Kubernetes secrets).
"""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation

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


# --- limits (agents_app.services.access.limits) ------------------------------------------------------
_RATE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(name: str, raw: str) -> tuple[int, int] | None:
    """``"120/m"``, ``"10/5m"``, ``"20/h"``, ``"1000/d"`` → (count, period in seconds);
    ``""`` or ``"off"`` → ``None`` (no limit)."""
    text = raw.strip().lower()
    if text in ("", "off", "none"):
        return None
    count, _, period = text.partition("/")
    unit = period[-1:] if period else ""
    multiple = period[:-1] or "1"
    if not (count.isdigit() and multiple.isdigit() and unit in _RATE_UNITS and int(multiple)):
        raise ImproperlyConfigured(
            f"{name} must look like 120/m, 10/5m, 20/h or 1000/d (or off), got {raw!r}"
        )
    return int(count), int(multiple) * _RATE_UNITS[unit]


def envrate(name: str, default: str) -> tuple[int, int] | None:
    return parse_rate(name, envstr(name, default))


def envdecimal(name: str) -> Decimal | None:
    """A non-negative amount, or ``None`` when unset."""
    raw = envstr(name).strip()
    if not raw:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation as exc:
        raise ImproperlyConfigured(
            f"{name} must be an amount like 25 or 12.50, got {raw!r}"
        ) from exc
    if not value.is_finite() or value < 0:
        raise ImproperlyConfigured(f"{name} must be a non-negative amount, got {raw!r}")
    return value


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
