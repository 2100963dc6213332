"""Start-up checks: a broken keyring or duplicate code names stop the server with a clear message."""

from __future__ import annotations

import os
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


# Variables the platform once read and no longer does: set, each would promise something that
# does not happen, so the start-up says so instead of ignoring it.
RETIRED_ENVIRONMENT = {
    "CELERY_VISIBILITY_TIMEOUT": (
        "the broker keeps no copy of a delivered task, so there is nothing to redeliver; "
        "the sweep dispatches a lost task again after STUDIO_SESSION_REDISPATCH_SECONDS"
    ),
}


@register()
def check_retired_environment(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [
        Error(
            f"{name} is no longer used: {why}.",
            hint="Remove it from the environment (docs/operating.md, 'Fault recovery').",
            id="agents.E021",
        )
        for name, why in RETIRED_ENVIRONMENT.items()
        if name in os.environ
    ]
