"""AG-UI interrupts (``/ag-ui``, docs/api.md "AG-UI", "Interrupts"): a tool call that waits for
a person or for the client ends the run with ``RUN_FINISHED``'s ``interrupt`` outcome, and a
``RunAgentInput`` whose ``resume`` answers it continues the same thread and session.

Driven as ``test_ag_ui`` drives the door: bodies built with the ``ag-ui-protocol`` package's
own ``RunAgentInput`` and ``ResumeEntry``, every event validated by its models over a real
socket. Agents are scripted (the ``test`` provider).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import ResumeEntry, UserMessage
from pydantic import BaseModel

from agents_app.base.code_registry import reset_registry
from agents_app.models import EnvValue, Message, Thread, ThreadFile, ThreadSession
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig, ToolConfig
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.door_mcp import *  # noqa: F403  (fixture: air_server)
from tests.agents_app.api.door_mcp import BOOKED, QUESTION, traveller_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)
from tests.agents_app.api.test_ag_ui import _of, _post, key_of, run, run_body
from tests.mcp_servers.processes import HttpMcpServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


class NoteArgs(BaseModel):
    text: str


@define_tool("Save a note in the thread's files.", NoteArgs)
async def save_note(state: Any, args: NoteArgs) -> str:
    await state.write_file("/notes/today.txt", args.text, "text/plain")
    return "saved"


@pytest.fixture(autouse=True)
def _notes_tool() -> Iterator[None]:
    reset_registry(Registry(save_note))
    yield
    reset_registry(None)


def _notes_agent(**tool: Any) -> None:
    script = (
        TestScript()
        .add_tool_call("save_note", {"text": "Buy milk"}, id="call_1", content="Saving it.")
        .add_text("Done with your note.")
    )
    model = script.model("notes-model")
    prompt = PromptDefinition(
        name="notes-prompt",
        model=model.name,
        prompt="Keep notes.",
        tools=[ToolConfig(name="save_note", **tool)],
    )
    agent = AgentDefinition(
        name="notes", description="Keeps notes.", side_a=SideConfig(prompt=prompt.name)
    )
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


def _resume_body(thread_id: str, *entries: ResumeEntry) -> dict[str, Any]:
    messages = [UserMessage(id=f"u-{time.monotonic_ns()}", content="Note: buy milk")]
    return run_body(thread_id, "", messages=messages, resume=list(entries))


def _interrupted(server: str, key: str, thread_id: str) -> Any:
    events = run(server, key, "notes", run_body(thread_id, "Note: buy milk"))
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED"
    assert finished.outcome is not None and finished.outcome.type == "interrupt"
    [call] = _of(events, "TOOL_CALL_END")
    assert call.tool_call_id == "call_1"
    assert not _of(events, "TOOL_CALL_RESULT")  # it waits: no result yet
    assert ThreadSession.objects.get().status == ThreadSession.Status.PARKED
    return finished.outcome


def _texts(events: list[Any]) -> str:
    return "".join(e.delta for e in _of(events, "TEXT_MESSAGE_CONTENT"))


def test_a_call_waiting_for_approval_ends_the_run_with_an_interrupt_and_resume_continues_it(
    server: str, alice: Any
) -> None:
    _notes_agent(requires_approval=True)
    key = key_of(alice)
    outcome = _interrupted(server, key, "notes-1")
    [interrupt] = outcome.interrupts
    assert (interrupt.id, interrupt.tool_call_id, interrupt.reason) == (
        "call_1",
        "call_1",
        "tool_approval",
    )
    assert "save_note" in interrupt.message
    assert interrupt.response_schema["required"] == ["approve"]
    assert interrupt.metadata == {"tool": "save_note", "arguments": {"text": "Buy milk"}}
    session = ThreadSession.objects.get()

    approve = ResumeEntry(interrupt_id="call_1", status="resolved", payload={"approve": True})
    events = run(
        server, key, "notes", _resume_body("notes-1", approve), earlier_calls=frozenset({"call_1"})
    )
    assert events[-1].type.value == "RUN_FINISHED"
    assert events[-1].outcome.type == "success"
    [result] = _of(events, "TOOL_CALL_RESULT")
    assert (result.tool_call_id, result.content) == ("call_1", "saved")
    # Only what is new: the interrupted run's words are not told again.
    assert _texts(events) == "Done with your note."
    thread = Thread.objects.get()  # the same thread, the same session, resumed
    assert ThreadSession.objects.get().pk == session.pk
    assert ThreadSession.objects.get().status == ThreadSession.Status.COMPLETED
    assert ThreadFile.objects.filter(thread=thread, path="/notes/today.txt").exists()


def test_a_cancelled_or_refused_interrupt_is_the_call_s_refusal_and_the_agent_goes_on(
    server: str, alice: Any
) -> None:
    _notes_agent(requires_approval=True)
    key = key_of(alice)
    _interrupted(server, key, "notes-2")
    refuse = ResumeEntry(
        interrupt_id="call_1", status="resolved", payload={"approve": False, "reason": "No milk"}
    )
    events = run(
        server, key, "notes", _resume_body("notes-2", refuse), earlier_calls=frozenset({"call_1"})
    )
    [result] = _of(events, "TOOL_CALL_RESULT")
    assert "rejected" in result.content and "No milk" in result.content
    assert _texts(events) == "Done with your note."
    assert not ThreadFile.objects.filter(path="/notes/today.txt").exists()


def test_a_client_tool_is_an_interrupt_the_front_end_answers_with_its_result(
    server: str, alice: Any
) -> None:
    _notes_agent(client=True)
    key = key_of(alice)
    outcome = _interrupted(server, key, "notes-3")
    [interrupt] = outcome.interrupts
    assert interrupt.reason == "client_tool"
    answer = ResumeEntry(
        interrupt_id="call_1", status="resolved", payload={"result": {"saved": "on paper"}}
    )
    events = run(
        server, key, "notes", _resume_body("notes-3", answer), earlier_calls=frozenset({"call_1"})
    )
    [result] = _of(events, "TOOL_CALL_RESULT")
    assert "on paper" in result.content
    assert events[-1].outcome.type == "success"
    tool = Message.objects.get(role="tool")
    assert "on paper" in (tool.content or "")


def test_bad_resumes_are_json_errors_that_change_nothing(server: str, alice: Any, bob: Any) -> None:
    _notes_agent(requires_approval=True)
    key = key_of(alice)
    _interrupted(server, key, "notes-4")
    thread = Thread.objects.get()

    unknown = ResumeEntry(interrupt_id="call_9", status="resolved", payload={"approve": True})
    refused = _post(server, key, _resume_body("notes-4", unknown), agent="notes")
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "resume.0.interruptId"

    no_answer = ResumeEntry(interrupt_id="call_1", status="resolved", payload={"yes": 1})
    refused = _post(server, key, _resume_body("notes-4", no_answer), agent="notes")
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "resume.0.payload"

    # Another person cannot answer it, even naming our thread's own id.
    approve = ResumeEntry(interrupt_id="call_1", status="resolved", payload={"approve": True})
    refused = _post(server, key_of(bob), _resume_body(str(thread.pk), approve), agent="notes")
    assert refused.status_code == 404
    assert ThreadSession.objects.get().status == ThreadSession.Status.PARKED

    # A thread with nothing waiting has nothing to resume.
    run(server, key, "notes", _resume_body("notes-4", approve), earlier_calls=frozenset({"call_1"}))
    again = _post(server, key, _resume_body("notes-4", approve), agent="notes")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "nothing_to_resume"


def test_a_secret_in_a_waiting_call_s_arguments_never_reaches_the_front_end(
    server: str, alice: Any
) -> None:
    planted = EnvValue(scope="instance", key="MILK_CODE", value_type="secret")
    planted.value = "Buy milk"  # what the scripted call's arguments say
    planted.save()
    _notes_agent(requires_approval=True)
    key = key_of(alice)
    events = run(server, key, "notes", run_body("notes-5", "Note: buy milk"))
    [interrupt] = events[-1].outcome.interrupts
    sent = json.dumps([e.model_dump(mode="json") for e in events])
    assert "Buy milk" not in sent
    assert interrupt.metadata["arguments"] != {"text": "Buy milk"}


def test_a_variables_request_is_an_interrupt_answered_with_the_values_never_echoed(
    server: str, alice: Any, tmp_path: Path
) -> None:
    from tests.agents_app.api.test_spec_variables_requests import SECRET, _import

    _import(tmp_path)  # boss's subagent_create waits for REGION and SHOP_TOKEN
    key = key_of(alice)
    events = run(server, key, "boss", run_body("boss-1", "go"))
    [interrupt] = events[-1].outcome.interrupts
    assert interrupt.reason == "variables_request"
    assert "REGION, SHOP_TOKEN" in interrupt.message
    answer = ResumeEntry(
        interrupt_id=interrupt.id,
        status="resolved",
        payload={
            "values": {"REGION": "eu", "SHOP_TOKEN": SECRET},
            "types": {"SHOP_TOKEN": "secret"},
        },
    )
    resumed = run(
        server,
        key,
        "boss",
        _resume_body("boss-1", answer),
        earlier_calls=frozenset({interrupt.id}),
    )
    assert resumed[-1].type.value == "RUN_FINISHED", resumed[-1]
    assert resumed[-1].outcome.type == "success"
    assert "I asked the researcher." in _texts(resumed)
    sent = json.dumps([e.model_dump(mode="json") for e in events + resumed])
    assert SECRET not in sent
    child = Thread.objects.get(parent__isnull=False)
    assert EnvValue.objects.get(scope="thread", thread=child, key="REGION").value == "eu"


def test_an_mcp_server_s_question_is_an_interrupt_answered_with_the_server_s_fields(
    server: str, air_server: HttpMcpServer, ops: Any, alice: Any
) -> None:
    traveller_agent(air_server, ops)
    key = key_of(alice)
    events = run(server, key, "traveller", run_body("air-1", "Book LH400"))
    assert events[-1].outcome.type == "interrupt"
    [interrupt] = events[-1].outcome.interrupts
    assert (interrupt.id, interrupt.reason) == ("c1", "mcp_question")
    assert f"The MCP server air asks: {QUESTION}" in interrupt.message
    schema = interrupt.response_schema
    assert schema["properties"]["action"]["enum"] == ["accept", "decline", "cancel"]
    assert set(schema["properties"]["content"]["properties"]) == {"seat", "window"}

    def resume(payload: Any) -> dict[str, Any]:
        entry = ResumeEntry(interrupt_id="c1", status="resolved", payload=payload)
        messages = [UserMessage(id=f"u-{time.monotonic_ns()}", content="Book LH400")]
        return run_body("air-1", "", messages=messages, resume=[entry])

    unasked = resume({"action": "accept", "content": {"row": 3}})
    refused = _post(server, key, unasked, agent="traveller")
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "resume.0.payload"
    assert "not asked for by the server: row" in refused.json()["error"]["message"]

    seat = resume({"action": "accept", "content": {"seat": "12A", "window": True}})
    resumed = run(server, key, "traveller", seat, earlier_calls=frozenset({"c1"}))
    [result] = _of(resumed, "TOOL_CALL_RESULT")
    assert (result.tool_call_id, result.content) == ("c1", BOOKED)
    assert resumed[-1].outcome.type == "success"
