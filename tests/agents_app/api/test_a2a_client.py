"""The A2A client (``a2a:<name>`` tools, docs/api.md "A2A client"): a scripted agent here calls
a remote A2A agent, which is our own ``/a2a`` door on a live server (``door_server``), over
real sockets; the chat's frames are read from the thread's WebSocket on the same server.

The caller's model is scripted (the ``test`` provider): ``expectInput`` makes its reply fail
unless the tool result it was sent holds what the test says, so "what the model received"
is checked by the model itself as well as by the stored tool rows.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from agents_app.models import A2aAgent, EnvValue, Log, Thread, ThreadSession, ThreadValue
from agents_app.models import Message as Row
from agents_app.orchestration.agent_calls import ACTIVE
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.definitions.files import (
    DefinitionFilesInvalid,
    definitions_export,
    definitions_import,
)
from agents_app.services.definitions.rows import DefinitionsInvalid
from agents_app.services.definitions.saves import save_definitions
from runtime.core import egress
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.providers.test_provider import TestScript
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)
from tests.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WAIT = 30


def _secret(key: str, value: str) -> None:
    row = EnvValue(scope="instance", key=key, value_type="secret")
    row.value = value
    row.save()


def _remote(server: str, alice: Any, name: str = "oracle", agent: str = "oracle") -> str:
    """``name``: our server's ``/a2a/<agent>`` as a remote A2A agent, alice's key in a secret."""
    _, key = api_key_create(user=alice, name="remote key")
    _secret("ORACLE_KEY", key)
    remote = A2aAgentDefinition(
        name=name, url=f"{server}/a2a/{agent}", headers={"Authorization": "Bearer ${ORACLE_KEY}"}
    )
    save_definitions([(f"a2a/{name}", remote)])
    return key


def _caller(script: TestScript, tools: list[str]) -> None:
    model = script.model("caller-model")
    prompt = PromptDefinition(
        name="caller-prompt", model=model.name, prompt="Ask the oracle.", tools=tools
    )
    agent = AgentDefinition(name="caller", side_a=SideConfig(prompt=prompt.name))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)


class Chat:
    """alice's thread with ``caller`` over the live server: posts, and every frame received."""

    def __init__(self, server: str, key: str) -> None:
        self.headers = {"Authorization": f"Bearer {key}"}
        self.http = httpx.Client(base_url=f"{server}/api", headers=self.headers, timeout=WAIT)
        created = self.http.post("/threads", json={"agent_id": "caller"})
        assert created.status_code == 200, created.text
        self.thread = created.json()["threadId"]
        self.frames: list[dict[str, Any]] = []
        self.url = server.replace("http://", "ws://") + f"/api/threads/{self.thread}/stream"
        self.socket: Any = None
        opened = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(opened,), daemon=True)
        self._reader.start()
        assert opened.wait(WAIT), "the thread's WebSocket did not open"

    def _read(self, opened: threading.Event) -> None:
        with connect(self.url, additional_headers=self.headers, open_timeout=WAIT) as socket:
            self.socket = socket
            opened.set()
            try:
                for raw in socket:
                    self.frames.append(json.loads(raw))
            except Exception:  # noqa: BLE001 - the socket closed: the test is over
                return

    def say(self, text: str) -> None:
        stopped = len([f for f in self.frames if f.get("type") == "stopped"])
        posted = self.http.post(
            f"/threads/{self.thread}/messages", json={"role": "user", "content": text}
        )
        assert posted.status_code == 202, posted.text
        deadline = time.monotonic() + WAIT
        while len([f for f in self.frames if f.get("type") == "stopped"]) <= stopped:
            assert time.monotonic() < deadline, [f.get("type") for f in self.frames]
            time.sleep(0.05)

    def events(self, name: str) -> list[dict[str, Any]]:
        return [f["data"] for f in self.frames if f.get("eventType") == name]

    def close(self) -> None:
        self.socket.close()
        self._reader.join(WAIT)
        self.http.close()


@pytest.fixture
def chat(server: str, alice: Any) -> Iterator[Any]:
    opened: list[Chat] = []

    def open_chat(key: str) -> Chat:
        opened.append(Chat(server, key))
        return opened[-1]

    yield open_chat
    for each in opened:
        each.close()
    # A remote agent's session goes on after its caller gave up (the "slow" one streams for
    # 4 s past a 400 ms timeout): it ends before the test's database is emptied. Still
    # writing then, it broke the flush's foreign keys and left rows to the next test.
    wait_until(
        lambda: not ThreadSession.objects.filter(status__in=ACTIVE).exists(),
        "the sessions a test left running to end",
        timeout=WAIT,
        interval=0.05,
    )


def _tool_rows(thread: str) -> list[tuple[str, str | None]]:
    rows = Row.objects.filter(thread_id=thread, role="tool").order_by("created_at")
    return [(r.tool_status or "", r.content) for r in rows]


def test_a_remote_agent_is_one_tool_its_answer_the_result_its_context_kept_per_thread(
    server: str, alice: Any, chat: Any
) -> None:
    define_agent(
        "oracle",
        [
            {"content": "The answer is 42."},
            {"content": "Still 42.", "expectInput": {"messageCount": 3}},
        ],
        streaming={"chunkSize": 5, "chunkDelayMs": 10},
    )
    key = _remote(server, alice)
    script = (
        TestScript()
        .add_tool_call("oracle", {"message": "What is the answer?"}, id="call_1")
        .add_text(
            "It says 42.",
            expect_input={"containsToolResult": {"toolName": "oracle", "resultContains": "42"}},
        )
        .add_tool_call("oracle", {"message": "Are you sure?"}, id="call_2")
        .add_text("Sure.")
    )
    _caller(script, ["a2a:oracle"])
    conversation = chat(key)
    conversation.say("Ask the oracle.")
    conversation.say("Check again.")

    assert _tool_rows(conversation.thread) == [
        ("success", "The answer is 42."),
        ("success", "Still 42."),
    ]
    # One remote thread: the second call continued the first's context.
    [remote] = Thread.objects.filter(agent__name="oracle")
    texts = Row.objects.filter(thread=remote, depth=0).order_by("created_at")
    assert [(m.role, m.content) for m in texts] == [
        ("user", "What is the answer?"),
        ("assistant", "The answer is 42."),
        ("user", "Are you sure?"),
        ("assistant", "Still 42."),
    ]
    kept = ThreadValue.objects.get(thread_id=conversation.thread, key="a2a.oracle").value
    assert kept == {"contextId": str(remote.pk), "taskId": None}
    # The chat saw the remote task's status updates live, for each call.
    progress = conversation.events("tool_call_progress")
    assert {p["id"] for p in progress} == {"call_1", "call_2"}
    assert {p["name"] for p in progress} == {"oracle"}
    assert [p["state"] for p in progress if p["id"] == "call_1"][-1] == "completed"
    assert "working" in [p["state"] for p in progress]
    # The model saw one tool named after the definition, with a message argument, described
    # by the remote card (our card: the agent's title, and one skill, itself).
    card = A2aAgent.objects.get(name="oracle").card
    assert card is not None and card["name"] == "oracle"
    first = Log.objects.filter(thread_id=conversation.thread, kind="llm").order_by("created_at")[0]
    sent = json.dumps(first.request_body)
    assert json.dumps("Oracle\nSkills:\n- oracle: Oracle") in sent
    assert '"message"' in sent and "a2a:" not in sent


def test_a_remote_question_is_the_result_and_the_answer_continues_that_task(
    server: str, alice: Any, chat: Any
) -> None:
    from agents_app.base.code_registry import reset_registry
    from runtime.tools.registry import Registry
    from tests.agents_app.api.test_a2a import _approval_agent, save_note

    reset_registry(Registry(save_note))
    try:
        _approval_agent()  # the remote: a tool call that waits for approval is input-required
        key = _remote(server, alice, name="notes", agent="notes")
        script = (
            TestScript()
            .add_tool_call("notes", {"message": "Note: buy milk"}, id="call_1")
            .add_text(
                "It asks for approval.",
                expect_input={
                    "containsToolResult": {"toolName": "notes", "resultContains": "approve"}
                },
            )
            .add_tool_call("notes", {"message": "approve"}, id="call_2")
            .add_text("Done.")
        )
        _caller(script, ["a2a:notes"])
        conversation = chat(key)
        conversation.say("Save a note.")
        [(status, asked)] = _tool_rows(conversation.thread)
        assert status == "success"
        assert asked is not None and asked.startswith(
            "The remote agent notes needs more input before it can finish. It asked:\n"
        )
        assert "save_note" in asked and "Call notes again with the answer" in asked
        conversation.say("Approve it.")
        # The remote's answer, and the file its tool wrote, saved here (docs/api.md).
        assert _tool_rows(conversation.thread)[1] == (
            "success",
            "Saving it.\n\nSaved your note.\n\nThe remote agent notes returned files, saved in "
            "this thread:\n- /a2a/notes/today.txt (text/plain, 8 bytes)",
        )
    finally:
        reset_registry(None)


def test_failures_come_back_as_tool_errors_in_words(server: str, alice: Any, chat: Any) -> None:
    define_agent("helper")
    # A reply that takes seconds to stream, asked with a timeout of a fraction of that.
    define_agent("slow", [{"content": "x" * 40}], streaming={"chunkSize": 1, "chunkDelayMs": 100})
    _, key = api_key_create(user=alice, name="caller key")
    _secret("WRONG_KEY", "agtbldr_" + "0" * 64)
    _secret("ALICE_KEY", key)
    auth = {"Authorization": "Bearer ${ALICE_KEY}"}
    save_definitions(
        [
            ("a", A2aAgentDefinition(name="gone", url="http://127.0.0.1:9/a2a/x")),
            (
                "s",
                A2aAgentDefinition(
                    name="slow", url=f"{server}/a2a/slow", headers=auth, timeout_ms=400
                ),
            ),
            (
                "o",
                A2aAgentDefinition(
                    name="off", url=f"{server}/a2a/helper", headers=auth, enabled=False
                ),
            ),
            (
                "b",
                A2aAgentDefinition(
                    name="locked",
                    url=f"{server}/a2a/helper",
                    description="A remote agent whose key is wrong.",
                    headers={"Authorization": "Bearer ${WRONG_KEY}"},
                ),
            ),
        ]
    )
    script = (
        TestScript()
        .add_tool_calls(
            [
                {"name": "gone", "arguments": {"message": "Hello?"}, "id": "call_1"},
                {"name": "locked", "arguments": {"message": "Hello?"}, "id": "call_2"},
                {"name": "slow", "arguments": {"message": "Hello?"}, "id": "call_3"},
                {"name": "off", "arguments": {"message": "Hello?"}, "id": "call_4"},
            ]
        )
        .add_text("Neither answered.")
    )
    _caller(script, ["a2a:gone", "a2a:locked", "a2a:slow", "a2a:off"])
    conversation = chat(key)
    conversation.say("Try both.")
    rows = dict(
        Row.objects.filter(thread_id=conversation.thread, role="tool").values_list(
            "tool_call_id", "content"
        )
    )
    # No card and no description: not offered (the studio shows why, test_a2a_card_backoff).
    assert rows["call_1"] == "Failed to execute tool: Tool 'gone' is not available for this prompt."
    assert A2aAgent.objects.get(name="gone").last_error.startswith(
        "Could not read the card: could not connect to 127.0.0.1 (ConnectError)."
    )
    assert rows["call_2"].startswith(
        "Failed to execute tool: The remote agent locked could not be asked: its card could "
        "not be read: 127.0.0.1 answered HTTP 401 (not tried again for "
    )
    assert rows["call_3"].startswith(
        "Failed to execute tool: The remote agent slow could not be asked: no answer within 0.4 s"
    )
    # A disabled remote agent is not offered: the model's call names no tool it has.
    assert "off" in rows["call_4"] and "could not be asked" not in rows["call_4"]
    assert Row.objects.get(tool_call_id="call_4").tool_status == "error"
    assert "0000" not in json.dumps(rows)
    offered = json.dumps(
        Log.objects.filter(thread_id=conversation.thread, kind="llm")[0].request_body
    )
    assert "A remote agent whose key is wrong." in offered


# --- the definition kind ----------------------------------------------------------------------


def test_saves_refuse_bad_urls_denied_hosts_and_unknown_env_values(settings: Any) -> None:
    cases = {
        "url": A2aAgentDefinition(name="a", url="ftp://example.com"),
        "headers.Authorization": A2aAgentDefinition(
            name="b", url="https://example.com", headers={"Authorization": "Bearer ${NOPE}"}
        ),
        "headers.X-Api-Key": A2aAgentDefinition(
            name="c", url="https://example.com", headers={"X-Api-Key": "sk-literal"}
        ),
    }
    for path, definition in cases.items():
        with pytest.raises(DefinitionsInvalid) as refused:
            save_definitions([("a2a", definition)])
        [error] = refused.value.errors["a2a"]
        assert error.path == path, error
    egress.configure([])  # the default: loopback and private addresses refused
    with pytest.raises(DefinitionsInvalid, match="egress policy does not allow"):
        save_definitions([("a2a", A2aAgentDefinition(name="d", url="http://127.0.0.1:8/a2a/x"))])
    prompt = PromptDefinition(name="p", model="m", prompt="x", tools=["a2a:nobody"])
    with pytest.raises(DefinitionsInvalid, match="A2A agent 'nobody' does not exist"):
        save_definitions([("p", prompt)], strict_code_names=False)
    assert not A2aAgent.objects.exists()


def test_definition_files_round_trip_a2a_agents(tmp_path: Path) -> None:
    _secret("ORACLE_KEY", "x" * 20)
    definition = A2aAgentDefinition(
        name="oracle",
        url="http://127.0.0.1:1/a2a/oracle",
        description="Knows things.",
        headers={"Authorization": "Bearer ${ORACLE_KEY}"},
    )
    save_definitions([("a2a", definition)])
    definitions_export(directory=tmp_path)
    written = json.loads((tmp_path / "a2a" / "oracle.json").read_text())
    assert written == {
        "name": "oracle",
        "url": "http://127.0.0.1:1/a2a/oracle",
        "description": "Knows things.",
        "headers": {"Authorization": "Bearer ${ORACLE_KEY}"},
    }
    A2aAgent.objects.all().delete()
    report = definitions_import(directory=tmp_path)
    assert "a2a/oracle" in report.created
    assert A2aAgent.objects.get(name="oracle").description == "Knows things."
    (tmp_path / "a2a" / "oracle.json").write_text(json.dumps({**written, "url": "nowhere"}))
    with pytest.raises(DefinitionFilesInvalid, match="a2a/oracle.json: url"):
        definitions_import(directory=tmp_path)
