"""The engine's spans over the Django store (issue #42): a session run with tracing on
gives invoke_agent → step → chat / execute_tool spans with the GenAI attributes and the
definition versions it ran on; with tracing off, nothing is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents_app.models import ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.threads import messages as message_service
from runtime.core import tracing
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider=provider)
    yield exporter
    tracing.disable()


async def _run_one_session() -> None:
    @sync_to_async
    def post() -> str:
        define_agent("helper", [{"content": "Hello!"}])
        alice = get_user_model().objects.create_user(username="alice", password="pw-1-tests")
        thread = thread_create(user=alice, agent_name="helper")
        message_service.message_post(thread=thread, role="user", content="Hi")
        return str(ThreadSession.objects.get(thread=thread).pk)

    await run_session_job(await post())


async def test_a_session_gives_agent_step_and_chat_spans(spans: InMemorySpanExporter) -> None:
    await _run_one_session()
    by_name: dict[str, Any] = {s.name: s for s in spans.get_finished_spans()}
    assert {"invoke_agent helper", "step", "chat scripted"} <= set(by_name), sorted(by_name)
    session, step, chat = by_name["invoke_agent helper"], by_name["step"], by_name["chat scripted"]
    assert step.parent.span_id == session.context.span_id
    assert chat.parent.span_id == step.context.span_id
    assert session.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert "agents/helper=1" in session.attributes["standard_agents.definition_versions"]
    assert chat.attributes["gen_ai.provider.name"] == "test"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.output.messages" not in chat.attributes  # contents only when opted in


async def test_with_tracing_off_nothing_is_recorded() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert not tracing.enabled()
    await _run_one_session()
    assert exporter.get_finished_spans() == ()
