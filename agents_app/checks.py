"""Start-up checks: a broken keyring or duplicate code names stop the server with a clear message."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured


@register()
def check_encryption_keyring(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from agents_app.base.encryption import keyring

    try:
        keyring()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), hint="See docs/operating.md, 'Encryption keys'.", id="agents.E001")]
    return []


@register()
def check_code_registry(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from agents_app.base.code_registry import get_registry
    from runtime.tools.registry import RegistryError

    try:
        get_registry()
    except RegistryError as exc:
        return [
            Error(
                str(exc),
                hint="Tool, hook, effect and endpoint names must be unique.",
                id="agents.E002",
            )
        ]
    return []


@register()
def check_fault_points(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from django.conf import settings

    from agents_app.base.faults import POINTS

    unknown = sorted(set(settings.STUDIO_FAULT_POINTS) - POINTS)
    if not unknown:
        return []
    return [
        Error(
            f"STUDIO_FAULT_POINTS names unknown points: {', '.join(unknown)}",
            hint=f"Known points: {', '.join(sorted(POINTS))} (tests only; leave it unset).",
            id="agents.E014",
        )
    ]


@register()
def check_retention_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from agents_app.services.operations.retention import policy_problems, settings_policy

    return [
        Error(
            f"STUDIO_RETENTION_*: {problem}",
            hint="See docs/operating.md, 'Retention'.",
            id="agents.E020",
        )
        for problem in policy_problems(settings_policy())
    ]
