"""``define_handler``: deterministic code that takes one side's turns (spec 0.2.0 ``defineHandler``).

A side backed by ``{"handler": "<name>"}`` runs no model: the engine calls the handler's
``execute(state, message)`` once for each message that side receives, in order, at most once
(``runtime.loop.handler_turn``). Files under ``agents/handlers/`` are discovered like tools;
as in the reference, a handler is named after its file unless ``name`` is given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.core.definition_errors import NAME_RE

AnyFn = Callable[..., Any]
_OPTION_KEYS = frozenset({"name", "description", "execute"})


class HandlerError(ValueError):
    """A ``define_handler`` call is malformed (raised at import, so start-up names the file)."""


@dataclass(frozen=True)
class HandlerDefinition:
    """``execute(state, message)``, sync or async. What it returns becomes the side's message:
    a string is stored as one message of the side, ``None`` sends nothing (the handler may
    also write with ``state.inject_message``)."""

    name: str
    description: str
    execute: AnyFn

    def __post_init__(self) -> None:
        if self.name and not NAME_RE.match(self.name):
            raise HandlerError(
                f"define_handler: {self.name!r} is not a usable name (letters, digits, "
                "'_', '-' and '.', at most 128)"
            )

    def located(self, stem: str) -> HandlerDefinition:
        """A copy named after its file when no name was given (the reference's rule)."""
        return self if self.name else dataclasses.replace(self, name=stem)


def define_handler(
    options: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    execute: AnyFn | None = None,
) -> HandlerDefinition:
    """Define a side handler: ``define_handler(name=…, description=…, execute=fn)`` or the
    spec's object form ``define_handler({"description": …, "execute": fn})``.

    Without a name, a discovered handler is named after its file (``agents/handlers/echo.py``
    → ``echo``), as in the reference.
    """
    if options is not None:
        unknown = sorted(set(options) - _OPTION_KEYS)
        if unknown:
            raise HandlerError(f"define_handler: unknown options {unknown}")
        name = options.get("name", name)
        description = options.get("description", description)
        execute = options.get("execute", execute)
    if not isinstance(description, str) or not description.strip():
        raise HandlerError("define_handler: a description is required (what the handler does)")
    if not callable(execute):
        raise HandlerError("define_handler: execute must be a function execute(state, message)")
    if name is not None and not isinstance(name, str):
        raise HandlerError("define_handler: name must be text")
    return HandlerDefinition(name or "", description.strip(), execute)
