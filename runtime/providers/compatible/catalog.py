"""The providers a model definition may name beyond the four native adapters: the
first-party compatible vendors and the ones ``define_provider`` made in ``agents/providers/``.

Discovery imports every ``*.py`` under ``agents/providers/`` of the project folders (files
starting with ``_`` skipped, as for tools) and keeps each ``ProviderDefinition`` it finds.
The table is per process, filled at start-up like the tool registry; ``register`` is what
tests and discovery use.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from runtime.providers.compatible.builtin import BUILTIN
from runtime.providers.compatible.definition import ProviderDefinition, ProviderDefinitionError

# Names a definition may not take: the native adapters and the scripted provider.
RESERVED = frozenset({"openai", "openrouter", "anthropic", "google", "test"})

_defined: dict[str, ProviderDefinition] = {}
# The host's way to make sure its code was discovered (agents_app: the lazy code registry),
# asked before every read, so a rule that names providers never runs before discovery.
_loader: Callable[[], object] | None = None
_state = threading.local()  # ``loading``: this thread is inside the loader already


def set_loader(loader: Callable[[], object] | None) -> None:
    global _loader
    _loader = loader


def _ensure_loaded() -> None:
    if _loader is None or getattr(_state, "loading", False):
        return
    _state.loading = True
    try:
        _loader()
    finally:
        _state.loading = False


def definitions(*, load: bool = True) -> dict[str, ProviderDefinition]:
    """Every compatible provider by name: the first-party vendors, then the defined ones
    (``load=False``: as they stand, for the discovery itself)."""
    if load:
        _ensure_loaded()
    return {**BUILTIN, **_defined}


def register(definition: ProviderDefinition, origin: str = "") -> ProviderDefinition:
    """Keep ``definition``; a name taken by a built-in or another definition raises."""
    if definition.name in RESERVED or definition.name in BUILTIN:
        raise ProviderDefinitionError(
            f"define_provider: {definition.name!r} is a built-in provider's name"
            + (f" (in {origin})" if origin else "")
        )
    taken = _defined.get(definition.name)
    if taken is not None and taken is not definition and taken.origin != origin:
        raise ProviderDefinitionError(
            f"define_provider: duplicate provider name {definition.name!r} "
            f"(in {origin}; first in {taken.origin})"
        )
    kept = dataclasses.replace(definition, origin=origin or definition.origin)
    _defined[definition.name] = kept
    return kept


def unregister(name: str) -> None:
    _defined.pop(name, None)


def clear() -> None:
    """Forget every defined provider (a fresh discovery follows)."""
    _defined.clear()


def discover(folders: Iterable[str | Path]) -> list[ProviderDefinition]:
    """Import ``agents/providers/*.py`` of each folder (a project root or its ``agents``
    folder); returns the definitions found, in file order."""
    found: list[ProviderDefinition] = []
    for folder in folders:
        base = Path(folder)
        root = (base if base.name == "agents" else base / "agents") / "providers"
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            if path.name.startswith("_"):
                continue
            slug = re.sub(r"\W", "_", str(path.with_suffix("")))
            spec = importlib.util.spec_from_file_location(
                f"_standard_agents_providers.{slug}", path
            )
            if spec is None or spec.loader is None:
                raise ProviderDefinitionError(f"Cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            for value in vars(module).values():
                if isinstance(value, ProviderDefinition) and not value.builtin:
                    found.append(register(value, origin=str(path)))
    return found
