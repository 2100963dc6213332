"""Tool calls that wait, through the engine over ``DjangoStore``: the parked call is stored,
the session row is ``parked``, a decision is taken once, and resuming feeds it as the result."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from pydantic import BaseModel

from agents_app.bridge.store import DjangoStore
from agents_app.models import Message, ThreadSession
from agents_app.services.definitions import rows as defs
from runtime.core import waits
from runtime.core.spec import (
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SideConfig,
    ToolConfig,
)
from runtime.engine import Engine, NewMessage
from runtime.providers import ProviderRegistry
from runtime.providers.test_provider import TestProvider, TestScript
from runtime.store.events import ListSink
from runtime.store.protocol import NewThread
from runtime.tools.registry import Registry, define_tool

pytestmark = pytest.mark.django_db
RUNS: list[str] = []


class PathArgs(BaseModel):
    path: str


@define_tool("Delete a file (dangerous)", PathArgs)
async def wipe(state: Any, args: PathArgs) -> str:
    RUNS.append(args.path)
    return f"wiped {args.path}"


def _engine(**entry: Any) -> tuple[Engine, TestProvider, str]:
    RUNS.clear()
    alice = get_user_model().objects.create(username="alice")
    defs.model_from_definition(ModelDefinition(name="m", provider="test", model="scripted"))
    tool = ToolConfig(name="wipe", **entry)
    main = PromptDefinition(name="main", model="m", prompt="hi", tools=[tool], include_chat=True)
    defs.prompt_from_definition(main)
    defs.link_prompt_parts(main)
    defs.agent_from_definition(AgentDefinition(name="agent", side_a=SideConfig(prompt="main")))
    script = TestScript().add_tool_call("wipe", {"path": "/tmp"}, id="call_1").add_text("done")
    provider = TestProvider(script)
    providers = ProviderRegistry()
    providers.override("m", provider)
    store = DjangoStore()
    engine = Engine(store, ListSink(), registry=Registry(wipe), providers=providers)
    new = NewThread(id=str(uuid.uuid4()), agent_name="agent", user_id=str(alice.pk))
    thread_id = async_to_sync(store.create_thread)(new).id
    return engine, provider, thread_id


def test_spec_approval_parks_in_the_database_and_resumes_after_approval() -> None:
    engine, provider, thread_id = _engine(requires_approval=True)
    result = async_to_sync(engine.run_session)(thread_id, message=NewMessage("clean"))
    assert result.stop_reason == "awaiting_tool" and RUNS == []
    row = Message.objects.get(thread_id=thread_id, role="tool")
    assert row.status == "pending" and row.metadata["tool_wait"]["kind"] == "approval"
    session = ThreadSession.objects.get(thread_id=thread_id)
    assert session.status == ThreadSession.Status.PARKED
    store = DjangoStore()
    first = async_to_sync(store.decide_tool_call)(thread_id, "call_1", waits.approval(True))
    again = async_to_sync(store.decide_tool_call)(thread_id, "call_1", waits.approval(False, "x"))
    assert first is not None and again is None
    result = async_to_sync(engine.run_session)(thread_id)
    assert result.stop_reason == "stop_on_response" and RUNS == ["/tmp"]
    row.refresh_from_db()
    assert (row.status, row.tool_status, row.content) == ("completed", "success", "wiped /tmp")
    assert provider.requests[1].messages[-1]["content"] == "wiped /tmp"


def test_spec_rejection_reason_reaches_the_model_over_the_database() -> None:
    engine, provider, thread_id = _engine(requires_approval=True)
    async_to_sync(engine.run_session)(thread_id, message=NewMessage("clean"))
    decision = waits.approval(False, "not on Fridays")
    assert async_to_sync(DjangoStore().decide_tool_call)(thread_id, "call_1", decision)
    async_to_sync(engine.run_session)(thread_id)
    row = Message.objects.get(thread_id=thread_id, role="tool")
    assert RUNS == [] and row.tool_status == "error" and "not on Fridays" in row.content
    assert "not on Fridays" in provider.requests[1].messages[-1]["content"]


def test_inspector_lists_the_waiting_call_and_a_second_decision_is_a_conflict() -> None:
    from agents_app.base.errors import Conflict
    from agents_app.models import Thread
    from agents_app.pages.thread_inspector import thread_inspection
    from agents_app.services.sessions import tool_waits

    engine, _, thread_id = _engine(requires_approval=True)
    async_to_sync(engine.run_session)(thread_id, message=NewMessage("clean"))
    thread = Thread.objects.get(pk=thread_id)
    [shown] = thread_inspection(thread).pending_calls
    assert shown["tool"] == "wipe" and '"/tmp"' in shown["args"] and shown["kind"] == "approval"
    answer = tool_waits.tool_call_decide(thread, "call_1", waits.approval(True))
    assert answer["status"] == "resumed"
    assert ThreadSession.objects.get(thread_id=thread_id).status == ThreadSession.Status.QUEUED
    with pytest.raises(Conflict, match="already decided \\(approved\\)"):
        tool_waits.tool_call_decide(thread, "call_1", waits.approval(False, "late"))
    assert thread_inspection(thread).pending_calls == []


def test_stop_while_parked_answers_the_call_and_stops_the_session() -> None:
    from agents_app.models import Thread
    from agents_app.services.sessions.lifecycle import thread_stop

    engine, _, thread_id = _engine(requires_approval=True)
    async_to_sync(engine.run_session)(thread_id, message=NewMessage("clean"))
    thread_stop(thread=Thread.objects.get(pk=thread_id))
    row = Message.objects.get(thread_id=thread_id, role="tool")
    assert (row.status, row.tool_status, row.content) == (
        "completed",
        "error",
        "Execution stopped by user",
    )
    session = ThreadSession.objects.get(thread_id=thread_id)
    assert session.status == ThreadSession.Status.STOPPED and session.progress["finished"]
    assert RUNS == []


def test_thread_inspector_page_shows_the_waiting_call(client: Any) -> None:
    from django.urls import reverse

    engine, _, thread_id = _engine(requires_approval=True)
    async_to_sync(engine.run_session)(thread_id, message=NewMessage("clean"))
    admin = get_user_model().objects.create_superuser("root-admin", password="pw-admin-1")
    client.force_login(admin)
    page = client.get(reverse("admin:agents_app_thread_change", args=[thread_id]))
    html = page.content.decode()
    assert page.status_code == 200 and 'id="inspector-pending-calls"' in html
    assert "Tool calls waiting (1)" in html and "call_1" in html and "/tmp" in html
