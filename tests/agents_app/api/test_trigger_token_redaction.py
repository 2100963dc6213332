"""A trigger's URL is its credential (issue #52): its token never leaves the request. Fired
for real (accepted, refused, wrong method, revoked), the token appears in no exported span,
no log record, no error body and no line of the real server's access log; what does appear
is its first ten characters and ``[redacted]`` (docs/automation.md, "Triggers")."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import AsyncClient
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents_app.base import telemetry
from tests.agents_app.api.api_support import ApiClient, _api_hosts, client_for, define_agent  # noqa: F401
from tests.integration.stack import DAPHNE, ROOT, free_port, wait_until
from tests.integration.test_traces import Receiver

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = '{"order": {"id": "A-7"}}'
ROUTE = "api/inbound/<token>"
# Where the instrumentations put a request's URL (old and new HTTP semantic conventions).
URL_KEYS = ("http.target", "http.url", "url.path", "url.full")


def _create(user: Any) -> dict[str, Any]:
    define_agent("helper")
    created = client_for(user).post_json(
        "/api/triggers", {"agent": "helper", "template": "Order {{ order.id }}"}
    )
    assert created.status_code == 201, created.content
    return dict(created.json())


def _strings(span: ReadableSpan) -> list[str]:
    """Every text an exporter would send of ``span``."""
    texts = [span.name, span.status.description or ""]
    for attributes in (span.attributes, *(e.attributes for e in span.events)):
        for value in (attributes or {}).values():
            items = value if isinstance(value, tuple | list) else (value,)
            texts += [str(item) for item in items]
    return texts


@pytest.fixture
def spans() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    """The Django instrumentation into an in-memory exporter, behind the redaction step
    ``telemetry.configure`` puts in front of the OTLP exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(telemetry.redacting(SimpleSpanProcessor(exporter)))
    DjangoInstrumentor().instrument(tracer_provider=provider)
    try:
        yield exporter, provider
    finally:
        DjangoInstrumentor().uninstrument()


def test_a_trigger_token_never_appears_in_spans_or_logs(
    admin_user: Any,
    spans: tuple[InMemorySpanExporter, TracerProvider],
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter, provider = spans
    caplog.set_level(logging.DEBUG)
    created = _create(admin_user)
    token, path = created["token"], created["path"]
    shown = token[:10] + telemetry.REDACTED

    sync, asgi = ApiClient(), AsyncClient()  # WSGI and ASGI requests carry the URL apart
    answers: list[Any] = [
        sync.post(path, ORDER, content_type="application/json"),
        async_to_sync(asgi.post)(path, ORDER, content_type="application/json"),
        sync.post(path, "{}", content_type="application/json"),  # 400: no order.id
        sync.post(path + "?via=form", ORDER, content_type="text/plain"),  # 415
        async_to_sync(asgi.get)(path),  # 405
    ]
    client_for(admin_user).delete(f"/api/triggers/{created['id']}")
    answers.append(sync.post(path, ORDER, content_type="application/json"))  # 404: revoked
    assert [a.status_code for a in answers] == [202, 202, 400, 415, 405, 404]
    assert all(token not in a.content.decode() for a in answers)  # error bodies too

    # An outbound request to another studio's trigger (a webhook aimed at one), as the
    # httpx instrumentation records it: the same step redacts it.
    with provider.get_tracer("test").start_as_current_span(
        "POST", attributes={"url.full": f"https://elsewhere.example{path}"}
    ):
        pass

    finished = exporter.get_finished_spans()
    texts = [text for span in finished for text in _strings(span)]
    assert not [t for t in texts if token in t]
    # Redacted, not dropped: each request's server span still says which trigger it was for.
    inbound = [s for s in finished if (s.attributes or {}).get("http.route") == ROUTE]
    assert len(inbound) == 6
    for span in inbound:
        urls = [str(v) for k, v in (span.attributes or {}).items() if k in URL_KEYS]
        assert urls and all(shown in url for url in urls), dict(span.attributes or {})
    assert any(f"https://elsewhere.example/api/inbound/{shown}" in t for t in texts)

    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if token in m]
    assert f"Bad Request: /api/inbound/{shown}" in messages  # django.request, redacted


def test_a_bare_token_or_a_percent_encoded_path_is_redacted_too() -> None:
    token = "trg_AbCdEf" + "x" * 33
    assert telemetry.redact_trigger_tokens(f"GET /api/inbound/{token}?a=1 HTTP/1.1") == (
        "GET /api/inbound/trg_AbCdEf[redacted]?a=1 HTTP/1.1"
    )
    assert telemetry.redact_trigger_tokens(f"/api/inbound/trg_%41bCdEf{token[10:]}/") == (
        "/api/inbound/trg_%41bCd[redacted]/"
    )
    assert telemetry.redact_trigger_tokens(f"next=%2Fapi%2Finbound%2F{token}") == (
        "next=%2Fapi%2Finbound%2Ftrg_AbCdEf[redacted]"
    )
    once = telemetry.redact_trigger_tokens(f"/api/inbound/{token}")
    assert telemetry.redact_trigger_tokens(once) == once
    assert telemetry.redact_trigger_tokens("/api/threads/trg_ab") == "/api/threads/trg_ab"


@pytest.mark.integration
def test_the_real_servers_access_log_and_exported_spans_never_show_a_trigger_token(
    admin_user: Any, tmp_path: Path
) -> None:
    """``python -m studio.serve`` as production starts it, on the test's database, tracing
    to an OTLP endpoint of the test's: its stdout (the access log) and stderr (every log
    record) and every span it exports."""
    if connection.vendor != "postgresql":
        pytest.skip("the server process shares the test's PostgreSQL database")
    created = _create(admin_user)
    token, path = created["token"], created["path"]
    shown = token[:10] + telemetry.REDACTED
    db = connection.settings_dict
    receiver = Receiver()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "TEST_DB_NAME")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "studio.settings",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "STUDIO_VAR_DIR": str(tmp_path / "var"),
            "STUDIO_EXECUTOR": "none",
            "ALLOWED_HOSTS": "127.0.0.1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        }
    )
    port, log = free_port(), tmp_path / "daphne.log"
    server = subprocess.Popen(
        [*DAPHNE, "-b", "127.0.0.1", "-p", str(port), "studio.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{base}/api/auth/csrf", timeout=2).status_code == 200,
            "Daphne to answer",
            timeout=90,
        )
        with httpx.Client(base_url=base, timeout=30) as web:
            json_type = {"Content-Type": "application/json"}
            answers = [
                web.post(path, content=ORDER, headers=json_type),
                web.post(path, content="{}", headers=json_type),
                web.post(path, content=ORDER, headers={"Content-Type": "text/plain"}),
                web.post(path + "x", content=ORDER, headers=json_type),
            ]
        # On a connection of its own: a 405's Content-Length under /api/ is that of Django's
        # empty body, not of the JSON that replaced it, and the next answer reads its end.
        answers.append(httpx.get(f"{base}{path}", timeout=30))
        assert [a.status_code for a in answers] == [202, 400, 415, 404, 405]
        assert all(token not in a.text for a in answers)
        wait_until(
            lambda: sum(s["attributes"].get("http.route") == ROUTE for s in receiver.spans) >= 5,
            "the server spans at the OTLP endpoint",
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        receiver.server.shutdown()

    printed = log.read_text()
    assert token not in printed
    assert f'"POST /api/inbound/{shown}" 202' in printed, printed  # the access log
    assert f'"GET /api/inbound/{shown}" 405' in printed, printed
    assert f"Bad Request: /api/inbound/{shown}" in printed, printed  # django.request
    assert token.encode() not in b"".join(receiver.raw)
    inbound = [
        s["attributes"] for s in receiver.spans if s["attributes"].get("http.route") == ROUTE
    ]
    assert len(inbound) == 5
    for attributes in inbound:
        urls = [str(v) for k, v in attributes.items() if k in URL_KEYS]
        assert urls and all(shown in url for url in urls), attributes
