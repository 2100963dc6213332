"""How a prompt lists a knowledge base among its tools: ``knowledge:<name>``."""

from __future__ import annotations

import re
from collections.abc import Iterable

from runtime.core.definition_errors import DefinitionError

PREFIX = "knowledge:"
# OpenAI and Anthropic both accept tool names of at most 64 of these characters.
_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def base_name(tool: str) -> str | None:
    """``knowledge:<name>`` → ``name``; ``None`` when it is not such a name."""
    if not tool.startswith(PREFIX):
        return None
    return tool[len(PREFIX) :] or None


def wire_name(name: str) -> str:
    """The tool name the model sees for base ``name``: ``search_<name>``, as providers allow."""
    return ("search_" + _WIRE_UNSAFE.sub("_", name))[:64]


def reference_errors(path: str, tool: str, known: Iterable[str]) -> list[DefinitionError]:
    """Errors of a prompt's ``knowledge:<name>`` entry against the defined knowledge bases."""
    name = base_name(tool)
    if name is None:
        return [DefinitionError(path, f"'{tool}' must be written knowledge:<name>.")]
    if name not in set(known):
        return [DefinitionError(path, f"Knowledge base '{name}' does not exist.")]
    return []
