"""The AG-UI door (``/ag-ui``, docs/api.md "AG-UI"), driven the way an AG-UI front end drives
it: a ``RunAgentInput`` built with the ``ag-ui-protocol`` package's own model, posted over a
real socket, and **every** event of the answer validated with the package's event models
(no field they do not know) and checked for AG-UI's ordering rules.

The live server is ``door_server``'s (``studio.asgi.application`` under uvicorn); the agents
are scripted (the ``test`` provider). alice and bob are plain users.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, RunAgentInput, UserMessage
from ag_ui.core.events import BaseEvent
from django.contrib.auth.models import Group
from pydantic import BaseModel, TypeAdapter

from agents_app.base.code_registry import reset_registry
from agents_app.models import (
    Agent,
    Message,
    SpendBudget,
    Thread,
    ThreadSession,
    ThreadValue,
    UsageLimit,
)
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WAIT = 20  # seconds a client waits for one run here
EVENT = TypeAdapter(Event)


def key_of(user: Any) -> str:
    _, raw = api_key_create(user=user, name=f"ag-ui key of {user.username}")
    return raw


def run_body(thread_id: str, text: str, **fields: Any) -> dict[str, Any]:
    """A ``RunAgentInput`` as the package builds and serializes it (camelCase, on the wire)."""
    run = RunAgentInput(
        thread_id=thread_id,
        run_id=f"run-{time.monotonic_ns()}",
        messages=fields.pop("messages", None)
        or [UserMessage(id=f"u-{time.monotonic_ns()}", content=text)],
        tools=[],
        context=[],
        state=fields.pop("state", {}),
        forwarded_props={},
        **fields,
    )
    body: dict[str, Any] = run.model_dump(mode="json", by_alias=True)
    return body


def _no_unknown_fields(model: BaseModel, where: str) -> None:
    # The package's models keep unknown fields (extra="allow"): a misspelt field would
    # validate, so every model in the event must have none.
    assert not model.model_extra, f"{where}: fields AG-UI does not define: {model.model_extra}"
    for name in type(model).model_fields:
        value = getattr(model, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, BaseModel):
                _no_unknown_fields(item, f"{where}.{name}")


def run(
    server: str,
    key: str,
    agent: str,
    body: dict[str, Any],
    earlier_calls: frozenset[str] = frozenset(),
) -> list[BaseEvent]:
    """POST the run and read its stream: every event validated by the package's models
    (``earlier_calls``: tool calls an interrupted run started, whose results a resumed run
    tells)."""
    events: list[BaseEvent] = []
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    with httpx.stream(
        "POST", f"{server}/ag-ui/{agent}", json=body, headers=headers, timeout=WAIT
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            event = EVENT.validate_python(json.loads(line.removeprefix("data: ")))
            _no_unknown_fields(event, event.type.value)
            events.append(event)
    _well_formed(events, earlier_calls)
    return events


def _well_formed(events: list[BaseEvent], earlier_calls: frozenset[str] = frozenset()) -> None:
    """AG-UI's ordering rules: a run starts first and ends last; text messages, tool calls
    and steps start before their content and end before the run does."""
    kinds = [e.type.value for e in events]
    assert kinds[0] == "RUN_STARTED", kinds
    assert kinds[-1] in ("RUN_FINISHED", "RUN_ERROR") and kinds.count(kinds[-1]) == 1, kinds
    texts: set[str] = set()
    calls: set[str] = set()
    ended_calls: set[str] = set(earlier_calls)
    steps: set[str] = set()
    for event in events[1:-1]:
        kind = event.type.value
        if kind == "TEXT_MESSAGE_START":
            assert event.message_id not in texts  # type: ignore[attr-defined]
            texts.add(event.message_id)  # type: ignore[attr-defined]
        elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            assert event.message_id in texts, kinds  # type: ignore[attr-defined]
            if kind == "TEXT_MESSAGE_END":
                texts.discard(event.message_id)  # type: ignore[attr-defined]
        elif kind == "TOOL_CALL_START":
            calls.add(event.tool_call_id)  # type: ignore[attr-defined]
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert event.tool_call_id in calls, kinds  # type: ignore[attr-defined]
            if kind == "TOOL_CALL_END":
                calls.discard(event.tool_call_id)  # type: ignore[attr-defined]
                ended_calls.add(event.tool_call_id)  # type: ignore[attr-defined]
        elif kind == "TOOL_CALL_RESULT":
            assert event.tool_call_id in ended_calls, kinds  # type: ignore[attr-defined]
        elif kind == "STEP_STARTED":
            assert not steps, f"steps overlap: {kinds}"
            steps.add(event.step_name)  # type: ignore[attr-defined]
        elif kind == "STEP_FINISHED":
            assert event.step_name in steps, kinds  # type: ignore[attr-defined]
            steps.discard(event.step_name)  # type: ignore[attr-defined]
        else:
            assert kind in ("STATE_SNAPSHOT", "STATE_DELTA"), kind
    assert not texts and not calls and not steps, (texts, calls, steps)


def _of(events: list[BaseEvent], kind: str) -> list[Any]:
    return [e for e in events if e.type.value == kind]


def _transcript(thread: Thread) -> list[tuple[str, str]]:
    rows = Message.objects.filter(thread=thread, depth=0).order_by("created_at")
    return [(m.role, m.content or "") for m in rows]


# --- a reply ----------------------------------------------------------------------------------


def test_a_reply_streams_as_text_message_events_inside_a_step_of_the_run(
    server: str, alice: Any
) -> None:
    text = "Streaming, one small piece after another."
    define_agent(
        "helper",
        [{"content": text, "usage": {"promptTokens": 7}}],
        streaming={"chunkSize": 6, "chunkDelayMs": 30},
    )
    events = run(server, key_of(alice), "helper", run_body("conversation-1", "Stream it"))
    kinds = [e.type.value for e in events]
    contents = _of(events, "TEXT_MESSAGE_CONTENT")
    assert kinds == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * len(contents),
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    assert len(contents) > 1, "the text came in one piece: it was not streamed"
    thread = Thread.objects.get(owner=alice)
    reply = Message.objects.get(thread=thread, role="assistant")
    assert "".join(c.delta for c in contents) == reply.content == text
    assert _of(events, "TEXT_MESSAGE_START")[0].message_id == str(reply.pk)
    started, finished = events[0], events[-1]
    assert (started.thread_id, started.protocol_version) == ("conversation-1", "1.0")
    assert started.metadata == {"threadId": str(thread.pk)}
    assert finished.thread_id == "conversation-1" and finished.run_id == started.run_id
    assert finished.outcome.type == "success"
    assert finished.usage[0].input_tokens == 7
    assert _of(events, "STATE_SNAPSHOT")[0].snapshot == {}


def test_a_second_run_on_the_same_thread_id_continues_the_thread(server: str, alice: Any) -> None:
    define_agent(
        "helper",
        [
            {"content": "First answer."},
            {"content": "Second answer.", "expectInput": {"messageCount": 3}},
            {"content": "Third answer.", "expectInput": {"messageCount": 5}},
        ],
    )
    key = key_of(alice)
    run(server, key, "helper", run_body("conversation-2", "Question one"))
    # A front end sends the whole conversation again; the thread holds all but the last.
    earlier = [
        UserMessage(id="u1", content="Question one"),
        {"id": "a1", "role": "assistant", "content": "First answer."},
        UserMessage(id="u2", content="Question two"),
    ]
    second = run(server, key, "helper", run_body("conversation-2", "", messages=earlier))
    assert second[-1].type.value == "RUN_FINISHED"
    thread = Thread.objects.get(owner=alice)
    assert "ag-ui:conversation-2" in thread.tags
    # Our own thread id names the same thread.
    run(server, key, "helper", run_body(str(thread.pk), "Question three"))
    assert Thread.objects.count() == 1
    assert _transcript(thread) == [
        ("user", "Question one"),
        ("assistant", "First answer."),
        ("user", "Question two"),
        ("assistant", "Second answer."),
        ("user", "Question three"),
        ("assistant", "Third answer."),
    ]


def test_a_new_thread_starts_from_the_messages_before_the_user_s(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Noted.", "expectInput": {"messageCount": 4}}])
    messages = [
        {"id": "s", "role": "system", "content": "Answer briefly."},
        UserMessage(id="u1", content="Earlier question"),
        {"id": "a1", "role": "assistant", "content": "Earlier answer."},
        UserMessage(id="u2", content="Now this"),
    ]
    run(server, key_of(alice), "helper", run_body("elsewhere-1", "", messages=messages))
    assert _transcript(Thread.objects.get(owner=alice)) == [
        ("system", "Answer briefly."),
        ("user", "Earlier question"),
        ("assistant", "Earlier answer."),
        ("user", "Now this"),
        ("assistant", "Noted."),
    ]


# --- tools and state --------------------------------------------------------------------------


class MoodArgs(BaseModel):
    mood: str


@define_tool("Remember the user's mood in the thread's values.", MoodArgs)
async def remember_mood(state: Any, args: MoodArgs) -> str:
    await state.set_value("mood", args.mood)
    return f"remembered {args.mood}"


@pytest.fixture
def _mood_tool() -> Iterator[None]:
    reset_registry(Registry(remember_mood))
    yield
    reset_registry(None)


def _mood_agent() -> None:
    script = (
        TestScript()
        .add_tool_call("remember_mood", {"mood": "cheerful"}, id="call_1", content="Noting it.")
        .add_text("You seem cheerful.")
    )
    model = script.model("mood-model")
    prompt = PromptDefinition(
        name="mood-prompt", model=model.name, prompt="Notice moods.", tools=["remember_mood"]
    )
    agent = AgentDefinition(name="moods", side_a=SideConfig(prompt=prompt.name))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


@pytest.mark.usefixtures("_mood_tool")
def test_a_tool_call_and_its_result_stream_in_their_step_and_the_value_it_set_as_a_delta(
    server: str, alice: Any
) -> None:
    _mood_agent()
    body = run_body("moods-1", "I feel great", state={"city": "Paris"})
    events = run(server, key_of(alice), "moods", body)
    kinds = [e.type.value for e in events]
    # The run's state was written before the post: the snapshot has it.
    assert _of(events, "STATE_SNAPSHOT")[0].snapshot == {"city": "Paris"}
    assert kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_ARGS")
    assert kinds.index("TOOL_CALL_ARGS") < kinds.index("TOOL_CALL_END")
    assert kinds.index("TOOL_CALL_END") < kinds.index("TOOL_CALL_RESULT")
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("STEP_FINISHED")
    assert kinds.count("STEP_STARTED") == 2
    [start] = _of(events, "TOOL_CALL_START")
    [args] = _of(events, "TOOL_CALL_ARGS")
    [result] = _of(events, "TOOL_CALL_RESULT")
    first_reply = _of(events, "TEXT_MESSAGE_START")[0].message_id
    assert (start.tool_call_id, start.tool_call_name) == ("call_1", "remember_mood")
    assert start.parent_message_id == first_reply
    assert json.loads(args.delta) == {"mood": "cheerful"}
    assert result.tool_call_id == "call_1" and "remembered cheerful" in result.content
    deltas = [op for e in _of(events, "STATE_DELTA") for op in e.delta]
    assert [(op.op, op.path, op.value) for op in deltas] == [("add", "/mood", "cheerful")]
    texts = "".join(e.delta for e in _of(events, "TEXT_MESSAGE_CONTENT"))
    assert texts == "Noting it.You seem cheerful."
    thread = Thread.objects.get(owner=alice)
    assert dict(ThreadValue.objects.filter(thread=thread).values_list("key", "value")) == {
        "city": "Paris",
        "mood": "cheerful",
    }


def test_client_run_tools_are_refused_naming_the_field(server: str, alice: Any) -> None:
    define_agent("helper")
    body = run_body("c-1", "Hi")
    body["tools"] = [{"name": "show_map", "description": "Shows a map", "parameters": {}}]
    refused = _post(server, key_of(alice), body)
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "tools"
    assert "its own tools" in refused.json()["error"]["message"]
    assert not Thread.objects.exists()


# --- who may run it ---------------------------------------------------------------------------


def _post(server: str, key: str | None, body: Any, agent: str = "helper") -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers["Content-Type"] = "application/json"
    return httpx.post(f"{server}/ag-ui/{agent}", content=content, headers=headers, timeout=WAIT)


def test_an_agent_the_caller_may_not_see_is_404_and_no_key_is_401(
    server: str, alice: Any, bob: Any
) -> None:
    define_agent("helper")
    define_agent("secret")
    define_agent("beta")
    Agent.objects.filter(name="secret").update(state="draft")
    Agent.objects.get(name="beta").audience_groups.add(Group.objects.create(name="Beta"))
    key = key_of(bob)
    for hidden in ("secret", "beta", "nobody", "a/b"):
        refused = _post(server, key, run_body("t", "Hi"), hidden)
        assert refused.status_code == 404, hidden
        assert refused.json()["error"]["code"] == "agent_not_found"
    for anonymous in (None, "not-a-key"):
        refused = _post(server, anonymous, run_body("t", "Hi"))
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    # bob may not continue alice's thread by naming it (the thread API's 403, as /v1's).
    run(server, key_of(alice), "helper", run_body("alice-thread", "Hi"))
    theirs = Thread.objects.get(owner=alice)
    refused = _post(server, key, run_body(str(theirs.pk), "Hi"))
    assert refused.status_code == 403, refused.text
    # ... nor reach it through its tag: his own run with that threadId is a thread of his.
    run(server, key, "helper", run_body("alice-thread", "Hi"))
    assert Thread.objects.filter(owner=bob).count() == 1
    assert Message.objects.filter(thread=theirs).count() == 2


def test_usage_limits_and_budgets_refuse_the_run_before_it_starts(server: str, alice: Any) -> None:
    define_agent("helper")
    key = key_of(alice)
    UsageLimit.objects.create(user=alice, action="message_post", limit=0, period=60)
    refused = _post(server, key, run_body("t", "Hi"))
    assert refused.status_code == 429 and "Too many messages" in refused.json()["error"]["message"]
    UsageLimit.objects.all().delete()
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("0.00"))
    refused = _post(server, key, run_body("t", "Hi"))
    assert refused.status_code == 429 and "budget" in refused.json()["error"]["message"]
    assert refused.headers["content-type"] == "application/json"
    assert not Thread.objects.exists()


def test_bad_input_is_a_json_error_naming_the_field(server: str, alice: Any) -> None:
    define_agent("helper")
    key = key_of(alice)
    good = run_body("t", "Hi")
    cases: list[tuple[Any, int, str | None]] = [
        (b"{not json", 400, None),
        (b"[]", 400, "body"),
        ({**good, "temperature": 0.2}, 400, "temperature"),
        ({**good, "context": [{"description": "page", "value": "home"}]}, 400, "context"),
        ({**good, "forwardedProps": {"x": 1}}, 400, "forwardedProps"),
        ({**good, "state": [1, 2]}, 400, "state"),
        ({**good, "state": {"approvals": 1}}, 400, "state.approvals"),
        ({**good, "threadId": ""}, 400, "threadId"),
        ({**good, "messages": []}, 400, "messages"),
        (
            {**good, "messages": [{"id": "t", "role": "tool", "content": "x", "toolCallId": "c"}]},
            400,
            "messages.0.role",
        ),
        (
            {**good, "messages": [{"id": "u", "role": "user", "content": "hi\u0000"}]},
            400,
            None,
        ),
    ]
    for body, status, param in cases:
        refused = _post(server, key, body)
        assert refused.status_code == status, (body, refused.text)
        assert refused.headers["content-type"] == "application/json"
        error = refused.json()["error"]
        assert error["message"]
        if param is not None:
            assert error["param"] == param, (body, error)
    wrong_method = httpx.get(
        f"{server}/ag-ui/helper", headers={"Authorization": f"Bearer {key}"}, timeout=WAIT
    )
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
    assert not Thread.objects.exists()


def test_a_failed_session_ends_the_run_with_run_error(server: str, alice: Any) -> None:
    failing = {"error": {"message": "The vendor is down", "status": 400}}
    define_agent("helper", [failing, failing])
    events = run(server, key_of(alice), "helper", run_body("t", "Hi"))
    last = events[-1]
    assert last.type.value == "RUN_ERROR"
    assert last.code == "agent_failed" and "failed" in last.message


def test_a_front_end_that_goes_away_stops_the_session_it_started(server: str, alice: Any) -> None:
    # 40 pieces, 0.25 s apart: ten seconds of answer unless the session is stopped.
    define_agent("helper", [{"content": "x" * 40}], streaming={"chunkSize": 1, "chunkDelayMs": 250})
    headers = {"Authorization": f"Bearer {key_of(alice)}"}
    with httpx.stream(
        "POST", f"{server}/ag-ui/helper", json=run_body("t", "Go slowly"), headers=headers
    ) as response:
        for line in response.iter_lines():
            if '"TEXT_MESSAGE_CONTENT"' in line:
                break  # the reply streams: go away in the middle of it
    deadline = time.monotonic() + WAIT
    while (states := _sessions(alice)) != ["stopped"]:
        assert time.monotonic() < deadline, f"the session was not stopped: {states}"
        time.sleep(0.1)


def _sessions(user: Any) -> list[str]:
    return list(ThreadSession.objects.filter(thread__owner=user).values_list("status", flat=True))
