"""The provider interface: one streamed chat request in, a stream of events out.

Adapters (``test`` now; ``openai``, ``openrouter``, ``anthropic``, ``google``
later, over an injected ``httpx.AsyncClient``) translate a ``ProviderRequest``
into their wire format and their stream back into ``StreamEvent``s. The engine
never sees vendor payloads. Every failure is a ``ProviderError`` that says
whether retrying may help (the retry/fallback ladder reads ``retryable``).

Messages use the OpenAI chat shape as the neutral format:
``{role, content, tool_calls?, tool_call_id?, name?}`` with ``tool_calls`` in
OpenAI shape (``runtime.messages.ToolCall``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from runtime.definitions import ModelDefinition, ReasoningConfig

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]
ToolChoiceValue = Literal["auto", "none", "required"] | dict[str, str]


@dataclass(slots=True)
class ToolSchema:
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class ProviderRequest:
    """One chat request.

    ``model`` is the provider's model id; ``model_name`` the model definition's
    name. ``sequence`` is how many responses this thread already received from
    this model definition (scripted providers replay from it; real providers
    ignore it). ``metadata`` carries ``thread_id`` and ``prompt_name``.
    """

    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[ToolSchema] = field(default_factory=list)
    tool_choice: ToolChoiceValue = "auto"
    parallel_tool_calls: bool | None = None
    reasoning: ReasoningConfig | None = None
    model_name: str = ""
    sequence: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready copy for the request log."""
        return {
            "model": self.model,
            "system": self.system,
            "messages": self.messages,
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in self.tools
            ],
            "tool_choice": self.tool_choice,
            "parallel_tool_calls": self.parallel_tool_calls,
            "reasoning": self.reasoning.dump() if self.reasoning else None,
        }


@dataclass(slots=True)
class Usage:
    """Token usage of one response; ``cached_tokens`` is part of ``input_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


# --- stream events -------------------------------------------------------------------------


@dataclass(slots=True)
class TextDelta:
    """A piece of the response text."""

    text: str


@dataclass(slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning text."""

    text: str


@dataclass(slots=True)
class ToolCallStart:
    """The model started a tool call (its name is known)."""

    id: str
    name: str


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of a tool call's JSON arguments."""

    id: str
    delta: str


@dataclass(slots=True)
class ToolCallDone:
    """A complete tool call; ``arguments`` is the JSON-encoded argument object."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class Finish:
    """The end of the response: why it ended and what it cost."""

    reason: FinishReason
    usage: Usage


StreamEvent = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallDone | Finish


class ProviderError(Exception):
    """A failed request. ``code`` is a short machine word (``invalid_request``,
    ``rate_limit``, ``timeout``, ``server_error`` …), ``status`` the HTTP status
    when there was one, ``retryable`` whether the same request may succeed later."""

    def __init__(
        self,
        message: str,
        code: str = "unknown",
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.retryable = retryable


@runtime_checkable
class Provider(Protocol):
    """A chat-completion backend."""

    name: str

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its events, ending with exactly one ``Finish``.

        Raises ``ProviderError`` (before or during the stream) on failure.
        """
        ...


class ProviderFactory(Protocol):
    """Builds the provider for a model definition."""

    def __call__(self, model: ModelDefinition) -> Provider:
        """Return a provider able to serve ``model``."""
        ...


def retryable_status(status: int | None) -> bool:
    """Whether an HTTP status is worth retrying (429 and 5xx)."""
    return status is not None and (status == 429 or status >= 500)
