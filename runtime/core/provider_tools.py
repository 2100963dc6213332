"""Tools the model's vendor runs itself (spec 0.15 ``provider:<name>``), and what they leave.

The shared contract between the adapters and the engine: an adapter receives the
prompt's choices as ``ProviderToolChoice``s on ``ProviderRequest.provider_tools``,
sends them in its vendor's native form, and reports what the vendor ran as
``ProviderToolDone`` and ``WebSearchDone`` stream events and the answer's sources as
``CitationsFound``. Nothing here is ever executed locally.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ToolStatus = Literal["completed", "failed", "in_progress"]


@dataclass(frozen=True, slots=True)
class ProviderToolChoice:
    """A prompt's ``provider:<name>`` entry: the bare name and the options the prompt set."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProviderToolOffer:
    """One tool a vendor runs for a model (the spec's ``getTools``): its options as a JSON
    Schema object, so the studio can render and validate them."""

    name: str
    description: str
    options_schema: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ProviderExecutedToolResult:
    """A call the vendor ran (spec ``ProviderExecutedToolResult``); ``result`` holds the
    spec's optional ``actions``/``input``/``output``/``results``/``artifacts`` keys."""

    id: str
    name: str
    provider: str
    status: ToolStatus = "completed"
    result: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None

    def dump(self) -> dict[str, Any]:
        """The spec's JSON (``type`` mirrors ``name`` for older UIs, as the spec allows)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "type": self.name,
            "provider": self.provider,
            "status": self.status,
        }
        if self.result is not None:
            out["result"] = self.result
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out


@dataclass(slots=True)
class Citation:
    """A source the answer cites. ``start``/``end`` are character offsets into the stored
    assistant text (each vendor's byte or index form converted), ``None`` when the vendor
    names the source without a span."""

    url: str
    title: str | None = None
    start: int | None = None
    end: int | None = None
    cited_text: str | None = None

    def dump(self) -> dict[str, Any]:
        """JSON for the message, the API and the stream."""
        return {
            "url": self.url,
            "title": self.title,
            "start": self.start,
            "end": self.end,
            "cited_text": self.cited_text,
        }


# --- stream events (part of runtime.providers.base.StreamEvent) ----------------------------


@dataclass(slots=True)
class ProviderToolDone:
    """The spec's ``provider-tool-done`` chunk."""

    tool: ProviderExecutedToolResult


@dataclass(slots=True)
class WebSearchDone:
    """The spec's ``web-search-done`` chunk: a finished search with its queries and sources
    (``result`` in the spec's ``ProviderWebSearchResult`` JSON)."""

    id: str
    result: dict[str, Any]


@dataclass(slots=True)
class CitationsFound:
    """Sources the answer text cites; may come more than once per response."""

    citations: list[Citation]
