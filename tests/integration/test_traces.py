"""OpenTelemetry traces (issue #42): a real stack (Daphne and a Celery worker) exports to a
real OTLP/HTTP endpoint started by the test; the spans, decoded with opentelemetry-proto,
carry the GenAI attribute names, and one trace runs from the post's HTTP request in the web
process to the model and tool calls in the worker. A planted secret appears in no span."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.integration.stack import BIN, Stack, free_port, wait_until

pytestmark = pytest.mark.integration

CANARY = "sk-canary-traces-51d0e2"


class Receiver:
    """An OTLP/HTTP trace endpoint: keeps every span it is sent, with its service name."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.port = free_port()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.take(self.path, body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, path: str, body: bytes) -> None:
        assert path == "/v1/traces", path
        self.raw.append(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        {
                            "name": span.name,
                            "trace": span.trace_id.hex(),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "pid": resource.get("process.pid"),
                            "scope": scope_spans.scope.name,
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                        }
                    )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Receiver]]:
    receiver = Receiver()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_SERVICE_NAME": "agents-studio-test",
        "OTEL_BSP_SCHEDULE_DELAY": "200",  # export within a fraction of a second
        "STUDIO_TRACE_CONTENT": "true",
    }
    stack = Stack(Path(tmp_path_factory.mktemp("traced")), extra_env=env).start()
    stack.run(
        [
            str(BIN / "python"),
            "manage.py",
            "shell",
            "-c",
            "from agents_app.models import EnvValue; EnvValue.objects.create(scope='instance', "
            f"key='ORDER_REF', value='{CANARY}', value_type='secret')",
        ]
    )
    worker = stack.worker("traced")
    try:
        yield stack, receiver
    finally:
        worker.stop()
        stack.stop()
        receiver.server.shutdown()


def test_one_trace_runs_from_the_post_to_the_model_and_tool_spans(
    traced: tuple[Stack, Receiver],
) -> None:
    stack, receiver = traced
    with stack.client("alice") as alice:
        created = alice.post("/api/threads", json={"agent_id": "traced-agent"})
        assert created.status_code in (200, 201), created.text
        thread_id = created.json()["threadId"]
        posted = alice.post(
            f"/api/threads/{thread_id}/messages",
            json={"role": "user", "content": "Where is A-1001?"},
        )
        assert posted.status_code == 202, posted.text

    def finished() -> dict[str, Any] | None:
        # Each process exports on its own schedule, and the spans above the session's (the
        # worker's task run, the web's publish and request) end after it: wait for the
        # chain to reach a span with no parent, not only for the session's span.
        spans = list(receiver.spans)
        session = next((s for s in spans if s["name"] == "invoke_agent traced-agent"), None)
        if session is None:
            return None
        by_id = {s["id"]: s for s in spans}
        span = session
        while span["parent"] in by_id:
            span = by_id[span["parent"]]
        return session if span["scope"] == "opentelemetry.instrumentation.django" else None

    session = wait_until(finished, "the session's trace at the OTLP endpoint", timeout=60)
    trace = [s for s in receiver.spans if s["trace"] == session["trace"]]
    names = [s["name"] for s in trace]
    chats = [s for s in trace if s["name"].startswith("chat ")]
    tools = [s for s in trace if s["name"] == "execute_tool lookup_order"]
    assert len(chats) == 2 and len(tools) == 1, names
    assert session["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert session["attributes"]["gen_ai.agent.name"] == "traced-agent"
    assert session["attributes"]["standard_agents.thread.id"] == thread_id
    chat = chats[-1]["attributes"]
    for key in (
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.response.finish_reasons",
        "standard_agents.cost.usd",
    ):
        assert key in chat, (key, chat)
    assert chat["gen_ai.operation.name"] == "chat" and chat["gen_ai.provider.name"] == "test"
    versions = session["attributes"]["standard_agents.definition_versions"]
    assert any(v.startswith("agents/traced-agent=") for v in versions), versions
    tool = tools[0]["attributes"]
    assert tool["gen_ai.tool.name"] == "lookup_order" and tool["gen_ai.tool.call.id"]
    # The post's HTTP request (Django, in Daphne) is the root of the session's span, through
    # the Celery task's publish (web) and run (worker) spans: one trace across processes.
    by_id = {s["id"]: s for s in trace}
    chain, span = [], session
    while span["parent"] in by_id:
        span = by_id[span["parent"]]
        chain.append((span["scope"], span["name"]))
    scopes = [scope for scope, _ in chain]
    assert scopes[-1] == "opentelemetry.instrumentation.django", chain
    assert "opentelemetry.instrumentation.celery" in scopes, chain
    assert any(name.startswith("run/") for _, name in chain), chain
    # Reply texts are on the spans (STUDIO_TRACE_CONTENT), the planted secret redacted.
    assert "[REDACTED" in chat["gen_ai.output.messages"]
    assert CANARY not in b"".join(receiver.raw).decode("latin-1")
