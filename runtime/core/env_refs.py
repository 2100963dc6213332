"""``${NAME}`` references to env values inside definition text, and the rule that keeps
credentials out of definitions.

Definitions are shown in the studio, returned by the API, kept in every saved version and
exported to files, so a credential written into one is shown in clear everywhere. Where a
definition passes values on (MCP server headers and env, a prompt tool entry's ``env``),
a value under a credential-like name must therefore reference an env value, ``${NAME}``,
resolved when it is used from the env store (where secrets are typed, encrypted and known
to the redactor). One detector serves every such place.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
_SENSITIVE = re.compile(r"auth|token|key|secret|password|cookie|credential", re.IGNORECASE)
LITERAL_CREDENTIAL = "Write a credential as ${NAME} and keep it in a secret env value."


def literal_credential(name: str, value: str | None) -> bool:
    """``value`` under ``name`` looks like a credential written out in clear: the name says
    credential and the value references no env value."""
    return bool(_SENSITIVE.search(name) and value and not PLACEHOLDER.search(value))


def references(template: str) -> list[str]:
    """The env value names ``template`` references, in order."""
    return PLACEHOLDER.findall(template)


class MissingReference(LookupError):
    """A ``${NAME}`` names an env value that is not set; ``name`` is that NAME."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


async def expand(template: str, lookup: Callable[[str], Awaitable[str | None]]) -> str:
    """``template`` with each ``${NAME}`` replaced by ``lookup(NAME)`` (``MissingReference``
    when it gives ``None``)."""
    parts: list[str] = []
    last = 0
    for match in PLACEHOLDER.finditer(template):
        value = await lookup(match.group(1))
        if value is None:
            raise MissingReference(match.group(1))
        parts += [template[last : match.start()], value]
        last = match.end()
    return "".join(parts) + template[last:]
