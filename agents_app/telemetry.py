"""Traces to the operator's own observability stack (docs/observability.md).

Off by default. On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, with every other standard ``OTEL_*``
variable honoured by the SDK itself (service name, headers, batch delays, sampler). The
official pieces only: the SDK's tracer provider and batch processor, the OTLP/HTTP exporter,
the Django, Celery and httpx instrumentations; the engine's own spans come from
``runtime.core.tracing``. ``STUDIO_TRACE_CONTENT=true`` adds reply texts to the model spans,
redacted as logs are.
"""

from __future__ import annotations

import logging
import os

from django.conf import settings

from runtime.core import tracing

logger = logging.getLogger("agents_app.telemetry")
_configured = False


def wanted() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def configure() -> bool:
    """Install the tracer provider and the instrumentations once per process; False when
    tracing is off."""
    global _configured
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
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    HTTPXClientInstrumentor().instrument()
    tracing.enable(record_content=settings.STUDIO_TRACE_CONTENT)
    _configured = True
    logger.info("traces go to the OTLP endpoint (docs/observability.md)")
    return True
