"""Remote A2A agents as definitions (``a2a/<name>.json``) and the rules a prompt's
``a2a:<name>`` tool entry follows (docs/api.md "A2A client").

A definition says where the remote agent is (its Agent Card's URL, or the base URL the card
is found under), which headers to send (``${NAME}`` placeholders: credentials stay in the
env store, as MCP servers' do) and, optionally, how the model should see it described (else
the card's description and skills). The engine's seam is ``runtime.tools.a2a_tools``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import Field

from runtime.core.definition_errors import DefinitionError, check_name, parse
from runtime.core.env_refs import LITERAL_CREDENTIAL, literal_credential
from runtime.core.spec import Definition

PREFIX = "a2a:"
CARD_PATH = "/.well-known/agent-card.json"
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
# OpenAI and Anthropic both accept tool names of at most 64 of these characters.
_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class A2aAgentDefinition(Definition):
    """A remote A2A agent (``a2a/<name>.json``)."""

    name: str
    url: str
    description: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    enabled: bool = True


def card_url(url: str) -> str:
    """The Agent Card's URL: ``url`` itself when it names a card, else the well-known path."""
    if url.rstrip("/").endswith(".json"):
        return url
    return url.rstrip("/") + CARD_PATH


def agent_name(tool: str) -> str | None:
    """``a2a:<name>`` → ``name``; ``None`` when it is not such a name."""
    if not tool.startswith(PREFIX):
        return None
    return tool[len(PREFIX) :] or None


def wire_name(name: str) -> str:
    """The tool name the model sees: the definition's name as providers allow it."""
    return _WIRE_UNSAFE.sub("_", name)[:64]


def parse_agent(data: object) -> tuple[A2aAgentDefinition | None, list[DefinitionError]]:
    """Parse and check one ``a2a/<name>.json`` (the rules that need no database)."""
    obj, errs = parse(A2aAgentDefinition, data)
    if obj is None:
        return None, errs
    errs = validate_agent(obj)
    return (None, errs) if errs else (obj, [])


def validate_agent(d: A2aAgentDefinition) -> list[DefinitionError]:
    errs = check_name(d.name)
    if not re.match(r"^https?://[^\s/?#]+", d.url) or any(c.isspace() for c in d.url):
        errs.append(
            DefinitionError(
                "url", "The URL must start with http:// or https:// and name a host (no spaces)."
            )
        )
    if not 1 <= d.timeout_ms <= MAX_TIMEOUT_MS:
        errs.append(DefinitionError("timeoutMs", f"The timeout must be 1 to {MAX_TIMEOUT_MS} ms."))
    for key, value in d.headers.items():
        if not key.strip() or any(c in key for c in "\r\n:= ") or any(c in value for c in "\r\n"):
            errs.append(DefinitionError(f"headers.{key}", "Not a valid header."))
        elif literal_credential(key, value):
            # The definition is shown in the studio and exported to files.
            errs.append(DefinitionError(f"headers.{key}", LITERAL_CREDENTIAL))
    return errs


def reference_errors(path: str, tool: str, known: Iterable[str]) -> list[DefinitionError]:
    """Errors of a prompt's ``a2a:<name>`` entry against the defined remote agents."""
    name = agent_name(tool)
    if name is None:
        return [DefinitionError(path, f"'{tool}' must be written a2a:<name>.")]
    if name not in set(known):
        return [DefinitionError(path, f"A2A agent '{name}' does not exist.")]
    return []
