"""Traces to the operator's own observability stack (docs/observability.md).

Off by default. On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, with every other standard ``OTEL_*``
variable honoured by the SDK itself (service name, headers, batch delays, sampler). The
official pieces only: the SDK's tracer provider and batch processor, the OTLP/HTTP exporter,
the Django, Celery and httpx instrumentations; the engine's own spans come from
``runtime.core.tracing``. ``STUDIO_TRACE_CONTENT=true`` adds reply texts to the model spans,
redacted as logs are.

A trigger's URL is its credential (``POST /api/inbound/<token>``, docs/automation.md): its
token is cut to the prefix the studio shows in every exported span (``redacting``) and every
log record of the process, traced or not (``redact_trigger_tokens_in_logs``); Daphne's
access log goes through ``redact_trigger_tokens`` too (``studio/serve.py``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django.conf import settings

from runtime.core import tracing

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

logger = logging.getLogger("agents_app.base.telemetry")
_configured = False
_logs_redacted = False

REDACTED = "[redacted]"
# Ten characters kept, as the stored ``token_prefix`` ("trg_" and six): enough to tell
# which trigger a line is about, far too few to fire it. The path's segment is cut whatever
# it holds (percent-escapes included); a token elsewhere (a query, a reply) by its shape.
_TRIGGER_PATH = re.compile(r"(/api/inbound/[^/?#\s\"'<>]{0,10})[^/?#\s\"'<>]+")
_TRIGGER_TOKEN = re.compile(r"(trg_[A-Za-z0-9_\-]{6})[A-Za-z0-9_\-]+")


def redact_trigger_tokens(text: str) -> str:
    """``text`` with each trigger token cut to its first ten characters and ``[redacted]``."""
    if "trg_" not in text and "/api/inbound/" not in text:
        return text
    text = _TRIGGER_PATH.sub(rf"\1{REDACTED}", text)
    return _TRIGGER_TOKEN.sub(rf"\1{REDACTED}", text)


def redact_trigger_tokens_in_logs() -> None:
    """Redact trigger tokens in every log record this process makes, once.

    At the record's creation rather than in a handler's filter: Django logs the path of
    every 4xx (``django.request``), so do our warnings, and every handler (the console's,
    an operator's, pytest's) then sees the redacted text."""
    global _logs_redacted
    if _logs_redacted:
        return
    _logs_redacted = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: left for the handler to report as usual
            return record
        redacted = redact_trigger_tokens(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return record

    logging.setLogRecordFactory(factory)


def redacting(processor: SpanProcessor) -> SpanProcessor:
    """``processor``, handed each finished span with trigger tokens cut from its name, its
    status and its own and its events' attributes: whichever instrumentation wrote the
    request's URL (``http.target``, ``http.url``, ``url.path``, ``url.full``), before any
    exporter sees it."""
    from opentelemetry.sdk.trace import SpanProcessor

    class Redacting(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            processor.on_start(span, parent_context=parent_context)

        def _on_ending(self, span: Any) -> None:
            processor._on_ending(span)

        def on_end(self, span: ReadableSpan) -> None:
            processor.on_end(_redacted(span))

        def shutdown(self) -> None:
            processor.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return processor.force_flush(timeout_millis)

    return Redacting()


def _texts(attributes: Any) -> Iterator[str]:
    for value in (attributes or {}).values():
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, str):
                yield item


def _redacted_attributes(attributes: Any) -> dict[str, Any]:
    def redact(value: Any) -> Any:
        if isinstance(value, str):
            return redact_trigger_tokens(value)
        if isinstance(value, tuple | list):
            return tuple(redact_trigger_tokens(v) if isinstance(v, str) else v for v in value)
        return value

    return {key: redact(value) for key, value in (attributes or {}).items()}


def _redacted(span: ReadableSpan) -> ReadableSpan:
    """``span``, or a copy of it without trigger tokens (a finished span is read-only)."""
    texts = [span.name, span.status.description or "", *_texts(span.attributes)]
    texts += [text for event in span.events for text in _texts(event.attributes)]
    if all(redact_trigger_tokens(text) == text for text in texts):
        return span
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status

    description = span.status.description
    return ReadableSpan(
        name=redact_trigger_tokens(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_redacted_attributes(span.attributes),
        events=[
            Event(e.name, _redacted_attributes(e.attributes), e.timestamp) for e in span.events
        ],
        links=span.links,
        kind=span.kind,
        status=Status(
            span.status.status_code, redact_trigger_tokens(description) if description else None
        ),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def wanted() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def configure() -> bool:
    """Install the tracer provider and the instrumentations once per process; False when
    tracing is off. Log records lose trigger tokens either way."""
    global _configured
    redact_trigger_tokens_in_logs()
    if _configured or not wanted():
        return _configured
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME", "agents-studio")}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(redacting(BatchSpanProcessor(OTLPSpanExporter())))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    HTTPXClientInstrumentor().instrument()
    tracing.enable(record_content=settings.STUDIO_TRACE_CONTENT)
    _configured = True
    logger.info("traces go to the OTLP endpoint (docs/observability.md)")
    return True
