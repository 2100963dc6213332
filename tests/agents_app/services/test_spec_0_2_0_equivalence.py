"""Issue #54: a 0.1.0 definition and its 0.2.0 conversion are one definition. Each demo
agent and each agent of the test suite's shared fixtures (the AgentBuilder doc's examples;
the RICH files of ``test_definition_files``) is saved as written, converted to 0.2.0
(``convert_definitions --write``; the examples are ``.ts`` files, which
``export_definitions`` writes as 0.2.0 JSON) and saved again; a scripted session on each
(over HTTP, the session run in-process) stores the same messages. RICH's models are vendors' (no key here),
so its agents are compared as loaded, not run.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from agents_app.base.code_registry import reset_registry
from agents_app.models import Agent, Message, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.services.definitions.demo import DEMO_DIR
from agents_app.services.definitions.rows import agent_definition
from runtime.core.spec import AgentDefinition
from runtime.tools.registry import Registry, define_hook, define_tool
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.services.test_definition_files import RICH, write_tree
from tests.agents_app.spec.test_spec_agentbuilder_import import EXAMPLES, PROMPTS, TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

# Per agent, the messages of its conversation (one session each).
DEMO_TALK = {
    "support_agent": ["Where is my order A-1001?", "Can I change the address?"],
    "debate_agent": ["Should cities ban cars from their centres?"],
    "intent_classifier": ["Where is my parcel?", "I want my money back."],
}
EXAMPLE_TALK = {
    name: ["Hello."]
    for name in (
        "support_agent",
        "checkout_agent",
        "billing_specialist",
        "debate_agent",
        "evaluation_agent",
    )
}


def _examples_tree(root: Path) -> Path:
    """The AgentBuilder doc's examples with JSON prompts and scripted models."""
    (root / "agents").mkdir(parents=True)
    for path in EXAMPLES.glob("*.ts"):
        shutil.copy(path, root / "agents" / path.name)
    models = {
        "m": {"name": "m", "provider": "test", "model": "scripted"},
        # The checkout side stops on its stop tool, so its model calls it.
        "checkout_model": {
            "name": "checkout_model",
            "provider": "test",
            "model": "scripted",
            "script": [{"toolCalls": [{"name": "confirm_order", "arguments": {"orderId": "A1"}}]}],
        },
    }
    files: dict[str, Any] = {f"models/{n}.json": body for n, body in models.items()}
    for name in PROMPTS:
        model = "checkout_model" if name == "checkout_flow" else "m"
        files[f"prompts/{name}.json"] = {"name": name, "prompt": f"You are {name}.", "model": model}
    return write_tree(root, files)


@pytest.fixture
def examples_registry() -> Iterator[None]:
    async def tool(state: Any) -> str:
        return "ok"

    reset_registry(Registry(*(define_tool("Example.", tool, name=n) for n in TOOLS)))
    yield
    reset_registry(None)


def _quiet(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _converted(src: Path, into: Path) -> Path:
    shutil.copytree(src, into)
    _quiet("convert_definitions", "--write", str(into))
    return into


def _run(thread_id: str) -> None:
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def _conversation(client: Any, agent: str, texts: list[str]) -> list[tuple[Any, ...]]:
    """What a conversation with ``agent`` stores: each message's role, side, depth, text,
    tool calls (by name) and status."""
    created = client.post_json("/api/threads", {"agent_id": agent})
    assert created.status_code == 200, created.content
    thread_id = created.json()["threadId"]
    for text in texts:
        posted = client.post_json(f"/api/threads/{thread_id}/messages", {"content": text})
        assert posted.status_code == 202, posted.content
        _run(thread_id)
    rows = Message.objects.filter(thread_id=thread_id).order_by("created_at")
    return [
        (
            m.role,
            m.side,
            m.depth,
            m.content,
            [call["function"]["name"] for call in m.tool_calls or []],
            m.tool_status,
            m.status,
        )
        for m in rows
    ]


def _talk(client: Any, talk: dict[str, list[str]]) -> dict[str, list[tuple[Any, ...]]]:
    return {name: _conversation(client, name, texts) for name, texts in talk.items()}


def _specs() -> set[str]:
    return set(Agent.objects.values_list("spec_version", flat=True))


@pytest.mark.parametrize("source", ["demo", "agentbuilder_examples"])
def test_A1_each_demo_and_fixture_agent_runs_the_same_converted_to_0_2_0(
    source: str, tmp_path: Path, as_: Any, alice: Any, request: pytest.FixtureRequest
) -> None:
    client, converted = as_(alice), tmp_path / "two"
    if source == "demo":  # converted by convert_definitions
        original, talk = DEMO_DIR, DEMO_TALK
        _converted(original, converted)
    else:
        request.getfixturevalue("examples_registry")
        original, talk = _examples_tree(tmp_path / "one"), EXAMPLE_TALK

    _quiet("import_definitions", str(original))
    assert _specs() == {"0.1.0"}
    if source != "demo":  # .ts files are read, not rewritten: export writes them in 0.2.0
        _quiet("export_definitions", str(converted))
    before = _talk(client, talk)
    _quiet("import_definitions", str(converted))
    assert _specs() == {"0.2.0"}
    after = _talk(client, talk)

    assert after == before
    assert all(len(messages) > len(talk[name]) for name, messages in before.items())


def _behaviour(agent: AgentDefinition) -> dict[str, Any]:
    """What an agent does, whatever generation writes it (0.1.0 counts turns, 0.2.0
    exchanges: a turn of each side)."""
    cap = agent.max_session_turns
    return {
        "people": agent.human_side(),
        "type": agent.type,
        "sides": {key: side.dump() for key, side in agent.sides().items()},
        "turn_cap": cap * 2 if cap is not None and agent.spec == "0.2.0" else cap,
        "rest": {
            k: v
            for k, v in agent.dump().items()
            if k not in ("type", "sideA", "sideB", "maxSessionTurns", "env", "tenvs")
        },
        "env": agent.env,
    }


def test_A1_each_rich_fixture_agent_loads_the_same_converted_to_0_2_0(tmp_path: Path) -> None:
    # The code tools and hooks the RICH files name (as test_definition_files registers them).
    tools = (
        define_tool("Demo.", _ok, name=n) for n in ("lookup_order", "classify", "close_ticket")
    )
    hooks = (define_hook(h, _ok, id=h) for h in ("filter_messages", "after_create_message"))
    reset_registry(Registry(*tools, *hooks))
    try:
        rich = write_tree(tmp_path / "one", RICH)
        converted = _converted(rich, tmp_path / "two")
        _quiet("import_definitions", str(rich))
        before = {a.name: _behaviour(agent_definition(a)) for a in Agent.objects.all()}
        _quiet("import_definitions", str(converted))
        after = {a.name: _behaviour(agent_definition(a)) for a in Agent.objects.all()}
    finally:
        reset_registry(None)
    assert _specs() == {"0.2.0"}
    assert after == before
    helper = json.loads((converted / "agents" / "helper_agent.json").read_text())
    assert "type" not in helper and helper["maxSessionTurns"] == 3


async def _ok(*args: Any) -> str:
    return "ok"
