"""How a prompt gives its model long-term memory of the person it talks with:
``memory:person`` among its tools offers ``remember``, ``recall`` and ``forget``
(docs/knowledge.md, "Memory"). Memories are the thread owner's account-wide values under
``MEMORY_KEY_PREFIX``, so they follow the person across threads and agents and never reach
anyone else.
"""

from __future__ import annotations

from runtime.core.definition_errors import DefinitionError

PREFIX = "memory:"
PERSON = "memory:person"
MEMORY_KEY_PREFIX = "memory/"
TOOL_NAMES = ("remember", "recall", "forget")


def is_memory_entry(name: str) -> bool:
    return name.startswith(PREFIX)


def reference_errors(path: str, name: str) -> list[DefinitionError]:
    """A ``memory:`` entry other than ``memory:person`` is refused (it would offer nothing)."""
    if name == PERSON:
        return []
    return [
        DefinitionError(
            path,
            f"'{name}' is not a memory tool set: write {PERSON} (it offers remember, recall "
            "and forget).",
        )
    ]
