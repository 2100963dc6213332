"""The provider interface: one streamed chat request in, a stream of events out.

Adapters (the scripted ``test`` provider; ``openai``, ``openrouter``,
``anthropic`` and ``google`` over an injected ``httpx.AsyncClient``) translate a
``ProviderRequest`` into their wire format and their stream back into
``StreamEvent``s. The engine never sees vendor payloads. Every failure is a
``ProviderError`` whose ``code`` is one of ``ERROR_CODES`` and which says
whether retrying may help (the retry/fallback ladder reads ``retryable`` and
``retry_after``).

Messages use the OpenAI chat shape as the neutral format:
``{role, content, tool_calls?, tool_call_id?, name?}`` with ``tool_calls`` in
OpenAI shape (``runtime.core.messages.ToolCall``). Two optional keys go beyond it:
an assistant message may carry ``provider_data`` (what its response's
``FinishDetails.provider_data`` held: thinking signatures and the like, sent
back so the vendor can continue its reasoning) and a tool message
``is_error`` (the result is an error). ``content`` may be a list of parts:
``text``, ``image_url`` (data or https URL) and ``file`` (``{file_data, filename}``,
PDFs), each media part with an ``attachment`` key (its ``AttachmentRef``) that
adapters never send (``runtime.step.media``). Generated images come back as
``ImageDelta`` events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from runtime.core.provider_tools import (
    CitationsFound,
    ProviderToolChoice,
    ProviderToolDone,
    WebSearchDone,
)
from runtime.core.spec import ModelDefinition, ReasoningConfig

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]
ToolChoiceValue = Literal["auto", "none", "required"] | dict[str, str]

# The eight error codes every provider maps its failures to (docs/providers.md#errors).
RATE_LIMIT = "rate_limit"
OVERLOADED = "overloaded"
INVALID_REQUEST = "invalid_request"
AUTHENTICATION = "authentication"
CONTEXT_TOO_LONG = "context_too_long"
TIMEOUT = "timeout"
NETWORK = "network"
UNKNOWN = "unknown"
ERROR_CODES = (
    RATE_LIMIT,
    OVERLOADED,
    INVALID_REQUEST,
    AUTHENTICATION,
    CONTEXT_TOO_LONG,
    TIMEOUT,
    NETWORK,
    UNKNOWN,
)


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
    this model definition, set only for providers that replay a script from it
    (``ProviderRegistry.replays``: the ``test`` provider); ``None`` for the vendors'
    adapters, which never read it. ``metadata`` carries ``thread_id`` and ``prompt_name``.
    ``max_output_tokens`` caps the response (``None``: the adapter's default;
    Anthropic requires a value and uses 8192). ``response_schema``: the prompt's
    structured-output schema.
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
    max_output_tokens: int | None = None
    # Structured output: a JSON Schema (an object) the final answer must match; adapters
    # send it in their vendor's native form (docs/providers.md#structured-output).
    response_schema: dict[str, Any] | None = None
    # The prompt's ``provider:<name>`` tools, for the vendor to run (runtime.core.provider_tools).
    provider_tools: list[ProviderToolChoice] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready copy for the request log."""
        out = {
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
        if self.response_schema is not None:
            out["response_schema"] = self.response_schema
        if self.provider_tools:
            out["provider_tools"] = [
                {"name": t.name, "options": t.options} for t in self.provider_tools
            ]
        return out


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
class ImageDelta:
    """An image the model generated (the spec's ``image-delta`` chunk): base64 ``data``
    or a ``url``, its media type, and the prompt the vendor rewrote it from, if any."""

    index: int
    media_type: str
    data: str | None = None
    url: str | None = None
    revised_prompt: str | None = None


@dataclass(slots=True)
class Finish:
    """The end of the response: why it ended and what it cost."""

    reason: FinishReason
    usage: Usage


StreamEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallStart
    | ToolCallDelta
    | ToolCallDone
    | ImageDelta
    | ProviderToolDone
    | WebSearchDone
    | CitationsFound
    | Finish
)


class ProviderError(Exception):
    """A failed request.

    ``code`` is one of ``ERROR_CODES``, ``status`` the HTTP status when there was
    one, ``retryable`` whether the same request may succeed later. ``retry_after``
    is the delay the vendor asked for (seconds), ``vendor_code`` the vendor's own
    error type or code, ``request_id`` the vendor's id of the failed request.
    ``message`` never contains an API key (adapters redact it before raising).
    """

    def __init__(
        self,
        message: str,
        code: str = UNKNOWN,
        status: int | None = None,
        retryable: bool = False,
        *,
        retry_after: float | None = None,
        vendor_code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.vendor_code = vendor_code
        self.request_id = request_id

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (for message metadata and log rows)."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        for name in ("status", "retry_after", "vendor_code", "request_id"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["retryable"] = self.retryable
        return out


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
    """Whether an HTTP status is worth retrying (what ``status_kind`` says)."""
    return status is not None and status_kind(status)[1]


def status_kind(status: int) -> tuple[str, bool]:
    """The error code and retryability an HTTP status alone implies."""
    if status in (401, 403):
        return AUTHENTICATION, False
    if status == 402:
        return RATE_LIMIT, False  # out of credits: waiting does not help
    if status == 408:
        return TIMEOUT, True
    if status == 409:
        return UNKNOWN, True  # OpenAI: lock contention, worth one more try
    if status == 413:
        return CONTEXT_TOO_LONG, False
    if status == 429:
        return RATE_LIMIT, True
    if status in (502, 503, 529):
        return OVERLOADED, True
    if status == 504:
        return TIMEOUT, True
    if status >= 500:
        return UNKNOWN, True
    return INVALID_REQUEST, False
