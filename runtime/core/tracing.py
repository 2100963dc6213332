"""OpenTelemetry spans of the engine, named and attributed by the GenAI semantic conventions.

``invoke_agent <agent>`` for a session, ``step`` for each step, ``chat <model>`` for each model
request, ``execute_tool <name>`` for each tool call (opentelemetry.io, "Semantic conventions
for generative AI": gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, …).

The engine uses only the OpenTelemetry API. Tracing is off until the host calls ``enable``
(agents_app does when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set): off, each helper is one check
of a module flag and returns a shared no-op context, so a step pays nothing for it
(tests/runtime/test_tracing.py holds that). Message contents are recorded only when the host
enables them, already redacted by the caller.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

_tracer: trace.Tracer | None = None
_record_content = False
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()
# What the host knows of the session that the engine does not (the definition versions it
# runs on), set before the engine runs and put on the session's span.
_session_extra: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "session_extra", default=None
)

# Attribute names, spelled once.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
# Ours, under our own namespace.
THREAD_ID = "standard_agents.thread.id"
SESSION_ID = "standard_agents.session.id"
STEP = "standard_agents.step"
SIDE = "standard_agents.side"
COST = "standard_agents.cost.usd"
VERSIONS = "standard_agents.definition_versions"
STOP_REASON = "standard_agents.stop_reason"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"


def enable(*, record_content: bool = False, provider: trace.TracerProvider | None = None) -> None:
    """Turn the engine's spans on (``provider``: the SDK's, or the global one)."""
    global _tracer, _record_content
    _tracer = trace.get_tracer("standard_agents.runtime", tracer_provider=provider)
    _record_content = record_content


def disable() -> None:
    global _tracer, _record_content
    _tracer, _record_content = None, False


def enabled() -> bool:
    return _tracer is not None


def records_content() -> bool:
    return _tracer is not None and _record_content


def _span(
    name: str, attributes: Mapping[str, Any]
) -> contextlib.AbstractContextManager[Span | None]:
    if _tracer is None:
        return _OFF
    clean = {k: v for k, v in attributes.items() if v is not None and v != ""}
    return _tracer.start_as_current_span(name, attributes=clean, kind=trace.SpanKind.INTERNAL)


def set_session_attributes(attributes: dict[str, Any]) -> None:
    """Attributes for the next session span in this context (the host's, e.g. versions)."""
    if _tracer is not None:
        _session_extra.set(attributes)


def session_span(
    agent: str, thread_id: str, session_id: str
) -> contextlib.AbstractContextManager[Span | None]:
    if _tracer is None:
        return _OFF
    return _span(
        f"invoke_agent {agent}",
        {
            OPERATION: "invoke_agent",
            AGENT_NAME: agent,
            CONVERSATION: thread_id,
            THREAD_ID: thread_id,
            SESSION_ID: session_id,
            **(_session_extra.get() or {}),
        },
    )


def step_span(step: int, side: str) -> contextlib.AbstractContextManager[Span | None]:
    return _span("step", {STEP: step, SIDE: side})


def chat_span(provider: str, model: str) -> contextlib.AbstractContextManager[Span | None]:
    return _span(f"chat {model}", {OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: model})


def tool_span(name: str, call_id: str) -> contextlib.AbstractContextManager[Span | None]:
    return _span(
        f"execute_tool {name}",
        {OPERATION: "execute_tool", TOOL_NAME: name, TOOL_CALL_ID: call_id, TOOL_TYPE: "function"},
    )


def record_model_log(span: Span | None, log: Any) -> None:
    """The request's outcome from its log record (``runtime.store.protocol.LogRecord``)."""
    if span is None:
        return
    span.set_attribute(PROVIDER, log.provider or "")
    span.set_attribute(RESPONSE_MODEL, log.model_id or log.model or "")
    span.set_attribute(INPUT_TOKENS, int(log.input_tokens))
    span.set_attribute(OUTPUT_TOKENS, int(log.output_tokens))
    if log.finish_reason:
        span.set_attribute(FINISH_REASONS, [log.finish_reason])
    span.set_attribute(COST, float(log.cost_total or 0.0))
    versions = getattr(log, "definition_versions", None)
    if versions:
        span.set_attribute(VERSIONS, [f"{k}={v}" for k, v in sorted(versions.items())])


def record_content(span: Span | None, key: str, text: str) -> None:
    """Message contents, only when the operator opted in (the caller has redacted them)."""
    if span is not None and _record_content:
        span.set_attribute(key, text)


def record_attribute(span: Span | None, key: str, value: Any) -> None:
    if span is not None and value is not None:
        span.set_attribute(key, value)


def record_error(span: Span | None, description: str) -> None:
    if span is not None:
        span.set_status(Status(StatusCode.ERROR, description))


@contextlib.contextmanager
def attached(carrier: Mapping[str, str] | None) -> Iterator[None]:
    """Continue the trace whose W3C ``traceparent`` is in ``carrier`` (from the task that
    started the session), for the duration of the block."""
    if _tracer is None or not carrier:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(dict(carrier)))
    try:
        yield
    finally:
        context.detach(token)


def current_carrier() -> dict[str, str]:
    """The current trace context as W3C headers (empty when tracing is off)."""
    if _tracer is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier
