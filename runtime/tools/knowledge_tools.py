"""``knowledge:<name>`` tools: a knowledge base offered to the model as a search tool
(docs/knowledge.md).

The model sees ``search_<name>``, described by the base's description, taking a ``query``
and an optional ``k``. A call runs the host's hybrid search through ``KnowledgeBases``
(``Deps.knowledge``; the Django host is ``agents_app/services/knowledge/tool_host.py``) and
returns the passages as JSON: each with its text, the document's title, its heading path or
page, and a link to the document, so the model can cite where an answer comes from.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field

from runtime.core.results import ToolResult, failure, success
from runtime.knowledge.names import wire_name
from runtime.tools.registry import ToolDefinition

MAX_K = 20


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    """What the model is told about a knowledge base."""

    name: str
    description: str


@dataclass(frozen=True)
class Citation:
    """One passage found, with where it comes from."""

    text: str
    document: str  # the document's title
    heading: str  # the heading path, "" when the document has none
    page: int | None
    link: str  # where a person opens the document
    score: float
    # The passage's id: the chat's citation opens it (/chat/passages/<id>/, docs/knowledge.md).
    passage_id: int | None = None


class KnowledgeUnavailable(Exception):
    """The base could not be searched; the message says so in words."""


class KnowledgeBases(Protocol):
    """What the engine needs to offer and run ``knowledge:`` tools."""

    async def base(self, name: str) -> KnowledgeBaseInfo | None:
        """The base's description; ``None`` when no base has that name."""
        ...

    async def search(self, name: str, query: str, k: int, *, thread_id: str = "") -> list[Citation]:
        """The ``k`` passages that best answer ``query``, best first, searched for thread
        ``thread_id`` (its owner must be in the base's audience; ``KnowledgeUnavailable``
        when the base cannot be searched, in words the model may read)."""
        ...


class KnowledgeArgs(BaseModel):
    query: str = Field(description="What to look for, in words (a question or key terms).")
    k: int = Field(default=5, ge=1, le=MAX_K, description="How many passages to return.")


def knowledge_tool(name: str, info: KnowledgeBaseInfo, bases: KnowledgeBases) -> ToolDefinition:
    """The native tool that searches knowledge base ``name`` (``knowledge:<name>``)."""
    description = (
        f"Search the {name} knowledge base"
        + (f" ({info.description.strip()})" if info.description.strip() else "")
        + ". Returns passages with the document, heading or page, and a link: cite them."
    )

    async def run(state: Any, args: KnowledgeArgs) -> ToolResult:
        try:
            found = await bases.search(name, args.query, args.k, thread_id=state.thread_id)
        except KnowledgeUnavailable as exc:
            return failure(f"The knowledge base {name} could not be searched: {exc}")
        if not found:
            return success(f"No passage of the {name} knowledge base matches that query.")
        return success(json.dumps({"passages": [asdict(c) for c in found]}, ensure_ascii=False))

    return ToolDefinition(wire_name(name), description, KnowledgeArgs, run)
