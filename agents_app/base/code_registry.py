"""The process-wide registry of code-defined tools, hooks, effects and thread endpoints.

Discovered once, lazily, from ``settings.STUDIO_AGENTS_DIRS`` (folders holding
``agents/{tools,hooks,effects,api}``) and from the ``agents`` subpackage of every
installed app. Duplicate names fail loudly at start-up (``DuplicateDefinitionError``)
instead of one silently overriding another.
"""

from __future__ import annotations

import threading
from pathlib import Path

from django.apps import apps
from django.conf import settings

from runtime.providers.registry import discover_providers
from runtime.tools.registry import Registry, discover

_lock = threading.Lock()
_registry: Registry | None = None


def load_registry() -> Registry:
    folders = [Path(p) for p in settings.STUDIO_AGENTS_DIRS if Path(p).exists()]
    packages = [cfg.name for cfg in apps.get_app_configs() if not cfg.name.startswith("django.")]
    # ``define_provider`` files (agents/providers/) are found with the rest of the code.
    discover_providers(folders, replace=True)
    return discover(folders=folders, packages=packages)


def get_registry() -> Registry:
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                _registry = load_registry()
    return _registry


def reset_registry(registry: Registry | None = None) -> None:
    """Replace the registry (tests register their own tools this way)."""
    global _registry
    with _lock:
        _registry = registry
