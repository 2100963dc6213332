"""Issue #54, rows A4 and A5 at the doors: ``sideX.subagents[]`` through ``import_definitions``,
``export_definitions``, ``convert_definitions``, the definition API (the reference studio's
snake_case bodies and ours) and the studio's agent form; a session over HTTP (run in-process)
whose model is offered the lifecycle tools and whose child the registry API lists."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError

from agents_app.models import Agent, Log, Message, Prompt, ThreadSession
from agents_app.orchestration.runner import run_session_job
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

MODEL = {"name": "m", "provider": "test", "model": "scripted"}
CHILD_MODEL = {"name": "mc", "provider": "test", "model": "scripted"}
BOSS_PROMPT = {"name": "boss_prompt", "model": "m", "prompt": "You lead.", "includeChat": True}
HELPER_PROMPT = {"name": "helper_prompt", "model": "mc", "prompt": "You help."}
HELPER = {
    "name": "helper",
    "exposeAsTool": True,
    "toolDescription": "Looks things up",
    "sideA": {"prompt": "helper_prompt"},
    "sideB": {"human": True},
}
RELATIONSHIP = {
    "agent": "helper",
    "as": "researcher",
    "description": "Digs up sources",
    "maxInstances": 2,
    "scopedEnv": ["REGION"],
    "parentCommunication": "explicit",
}
BOSS = {
    "name": "boss",
    "sideA": {"prompt": "boss_prompt", "subagents": [RELATIONSHIP]},
    "sideB": {"human": True},
}


def _write(root: Path, files: dict[str, Any]) -> Path:
    for label, data in files.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return root


def _tree(**changes: Any) -> dict[str, Any]:
    files = {
        "models/m": MODEL,
        "models/mc": CHILD_MODEL,
        "prompts/boss_prompt": BOSS_PROMPT,
        "prompts/helper_prompt": HELPER_PROMPT,
        "agents/helper": HELPER,
        "agents/boss": BOSS,
    }
    files.update(changes)
    return files


def _run(command: str, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _fails(command: str, *args: str) -> str:
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(command, *args, stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_A4_side_subagents_import_export_and_list_as_written(
    tmp_path: Path, as_: Any, ops: Any
) -> None:
    src = _write(tmp_path / "src", _tree())

    stdout, _ = _run("import_definitions", str(src))

    assert f"Imported 6 definitions from {src}: 6 created, 0 updated." in stdout
    assert Agent.objects.get(name="boss").side_a_subagents == [RELATIONSHIP]
    listed = {a["name"]: a for a in as_(ops).get("/api/agents").json()["agents"]}
    assert listed["boss"]["side_a_subagents"] == [RELATIONSHIP]
    assert listed["boss"]["side_b_subagents"] == []
    assert listed["boss"]["definition"]["sideA"]["subagents"] == [RELATIONSHIP]
    _run("export_definitions", str(tmp_path / "out"))
    assert _read(tmp_path / "out" / "agents" / "boss.json") == BOSS
    # 0.1.0 has no place for them: the 0.1.0 export refuses the file, naming the field.
    stderr = _fails("export_definitions", "--spec", "0.1.0", str(tmp_path / "old"))
    assert "sideA.subagents: 0.1.0 declares subagents in the prompt's tools" in stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"agents/helper": {**HELPER, "exposeAsTool": False}},
            "agents/boss.json: sideA.subagents[0].agent: Agent 'helper' is not exposed as a "
            "tool: a subagent target needs exposeAsTool: true",
        ),
        (
            {
                "agents/boss": {
                    **BOSS,
                    "sideA": {
                        "prompt": "boss_prompt",
                        "subagents": [{"agent": "helper", "initUserMessageProperty": "task"}],
                    },
                }
            },
            "agents/boss.json: sideA.subagents[0].initUserMessageProperty: subagent_create "
            "gives the child its first message",
        ),
        (
            {
                "agents/boss": {
                    **BOSS,
                    "sideA": {
                        "prompt": "boss_prompt",
                        "subagents": [{"agent": "helper", "immediate": {"nameEnv": "N"}}],
                    },
                }
            },
            "agents/boss.json: sideA.subagents[0].immediate: The object form of immediate",
        ),
        (
            {
                "agents/boss": {
                    "name": "boss",
                    "sideA": {"prompt": "boss_prompt"},
                    "sideB": {"human": True, "subagents": [{"agent": "helper"}]},
                }
            },
            "agents/boss.json: sideB.subagents: A person takes this side's turns",
        ),
        (
            {
                "prompts/boss_prompt": {
                    **BOSS_PROMPT,
                    "variables": [{"name": "REGION", "type": "text", "required": False}],
                    "tools": [{"name": "helper", "resumable": {"receives_messages": "side_a"}}],
                },
            },
            "prompts/boss_prompt.json: tools.0.resumable: 'helper' declares a subagent the spec "
            "0.1.0 way (resumable), and this prompt is written in spec 0.2.0 (it has variables "
            "or exposeAsTool), which declares subagents on the agent's side: move it to "
            "sideX.subagents of the agents that run this prompt (the tool's name becomes as, "
            "the resumable wrapper is unwrapped",
        ),
        (
            {
                "agents/boss": {
                    "name": "boss",
                    "type": "ai_human",
                    "sideA": {"prompt": "boss_prompt", "subagents": [{"agent": "helper"}]},
                }
            },
            "agents/boss.json: type: type is spec 0.1.0's way to say who is on each side, and "
            "sideA.subagents belong to spec 0.2.0",
        ),
    ],
    ids=["not_exposed", "init_property", "immediate_object", "human_side", "old_entry", "mixed"],
)
def test_A4_what_cannot_run_is_refused_at_import_naming_the_field(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    src = _write(tmp_path, _tree(**change))

    stderr = _fails("import_definitions", str(src))

    assert said in stderr
    assert not Agent.objects.filter(name="boss").exists()


def test_A4_0_1_0_prompt_entry_subagents_still_import_for_0_1_0_agents(tmp_path: Path) -> None:
    files = _tree(
        **{
            "prompts/boss_prompt": {
                **BOSS_PROMPT,
                "tools": [{"name": "helper", "resumable": {"receives_messages": "side_a"}}],
            },
            "agents/boss": {"name": "boss", "type": "ai_human", "sideA": {"prompt": "boss_prompt"}},
        }
    )
    stdout, _ = _run("import_definitions", str(_write(tmp_path, files)))
    assert "6 created" in stdout
    assert Agent.objects.get(name="boss").spec_version == "0.1.0"


def test_A4_the_definition_api_takes_side_subagents_in_both_body_shapes(
    tmp_path: Path, as_: Any, ops: Any
) -> None:
    _run("import_definitions", str(_write(tmp_path, _tree())))
    client = as_(ops)
    studio = client.get("/api/agents").json()["agents"]
    body = next(a for a in studio if a["name"] == "boss")
    body["side_a_subagents"] = [{"agent": "helper", "as": "scout", "blocking": True}]

    saved = client.put("/api/agents/boss", body, content_type="application/json")

    assert saved.status_code == 200, saved.content
    assert Agent.objects.get(name="boss").side_a_subagents == [
        {"agent": "helper", "as": "scout", "blocking": True}
    ]
    bad = {
        "definition": {
            **BOSS,
            "sideA": {"prompt": "boss_prompt", "subagents": [{"agent": "nobody"}]},
        }
    }
    refused = client.put("/api/agents/boss", bad, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"] == {
        "sideA.subagents[0].agent": "Agent 'nobody' does not exist."
    }


def test_A4_the_studio_form_shows_side_subagents_escaped_and_keeps_them(
    tmp_path: Path, client: Any, ops: Any
) -> None:
    hostile = {"agent": "helper", "as": "<img src=x onerror=alert(1)>"}
    files = _tree(
        **{"agents/boss": {**BOSS, "sideA": {"prompt": "boss_prompt", "subagents": [hostile]}}}
    )
    _run("import_definitions", str(_write(tmp_path, files)))
    client.force_login(ops)
    row = Agent.objects.get(name="boss")

    page = client.get(f"/admin/agents_app/agent/{row.pk}/change/").content.decode()

    assert "Subagents of this side" in page
    assert "&lt;img src=x onerror=alert(1)&gt; → helper" in page
    assert "<img src=x" not in page


def _blocking() -> dict[str, Any]:
    """The relationship, blocking (the child runs inside the call), without scoped env."""
    out = {key: value for key, value in RELATIONSHIP.items() if key != "scopedEnv"}
    return {**out, "blocking": True}


def _session(thread_id: str) -> None:
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


@pytest.mark.django_db(transaction=True)
def test_A5_a_session_over_http_offers_the_side_s_tools_and_keeps_the_child(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    create = {"agent": "researcher", "name": "Scout", "message": "Find sources"}
    files = _tree(
        **{
            "models/m": {
                **MODEL,
                "script": [
                    {"toolCalls": [{"name": "subagent_create", "arguments": create}]},
                    {"content": "I asked the researcher."},
                ],
            },
            "models/mc": {**CHILD_MODEL, "script": [{"content": "three sources"}]},
            "agents/boss": {
                **BOSS,
                "sideA": {"prompt": "boss_prompt", "subagents": [_blocking()]},
            },
        }
    )
    _run("import_definitions", str(_write(tmp_path, files)))
    client = as_(alice)
    thread_id = client.post_json("/api/threads", {"agent_id": "boss"}).json()["threadId"]
    assert (
        client.post_json(f"/api/threads/{thread_id}/messages", {"content": "go"}).status_code == 202
    )

    _session(thread_id)

    first = Log.objects.filter(thread_id=thread_id).order_by("created_at").first()
    assert first is not None
    tools = {t["name"]: t for t in first.request_body["tools"]}
    assert set(tools) == {"subagent_create", "subagents"}
    assert tools["subagent_create"]["parameters"]["properties"]["agent"]["enum"] == ["researcher"]
    [entry] = client.get(f"/api/threads/{thread_id}/subagents").json()["subagents"]
    assert (entry["relationship"], entry["agent_name"], entry["threadName"]) == (
        "researcher",
        "helper",
        "Scout",
    )
    assert entry["status"] == "idle"
    tool_row = Message.objects.get(thread_id=thread_id, role="tool")
    assert tool_row.content == f"three sources\n\nReference: {entry['id']}"
    child = client.get(f"/api/threads/{entry['id']}").json()["thread"]
    assert child["parent"] == thread_id and child["terminated"] is None


def test_A4_convert_definitions_moves_prompt_entry_subagents_onto_the_sides(
    tmp_path: Path,
) -> None:
    entry = {
        "name": "helper",
        "blocking": False,
        "resumable": {"receives_messages": "side_a", "maxInstances": 3},
    }
    files = _tree(
        **{
            "prompts/boss_prompt": {**BOSS_PROMPT, "tools": ["helper_prompt", entry]},
            "agents/boss": {"name": "boss", "type": "ai_human", "sideA": {"prompt": "boss_prompt"}},
            "agents/helper": {**HELPER, "sideB": {"human": True}},
        }
    )
    src = _write(tmp_path, files)

    dry, _ = _run("convert_definitions", str(src))

    assert (
        "prompts/boss_prompt.json:\n  - tools entry helper (a 0.1.0 subagent) → boss.sideA.subagents"
        in dry
    )
    assert "agents/boss.json:\n  - type ai_human → sideB: {human: true} (type removed)" in dry
    assert (
        "  - sideA.subagents += {'agent': 'helper', 'maxInstances': 3} (from prompt boss_prompt's tools)"
        in dry
    )
    assert _read(src / "prompts" / "boss_prompt.json") == files["prompts/boss_prompt"]
    _run("convert_definitions", "--write", str(src))
    assert _read(src / "prompts" / "boss_prompt.json")["tools"] == ["helper_prompt"]
    assert _read(src / "agents" / "boss.json")["sideA"] == {
        "prompt": "boss_prompt",
        "subagents": [{"agent": "helper", "maxInstances": 3}],
    }
    stdout, _ = _run("import_definitions", str(src))
    assert "6 created" in stdout
    assert Prompt.objects.get(name="boss_prompt").tool_entries.count() == 1


def test_A4_convert_definitions_keeps_a_subagent_it_cannot_move_and_says_so(
    tmp_path: Path,
) -> None:
    entry = {"name": "helper", "resumable": {"receives_messages": "side_b"}}
    files = _tree(
        **{
            "prompts/boss_prompt": {**BOSS_PROMPT, "tools": [entry]},
            "agents/boss": {"name": "boss", "type": "ai_human", "sideA": {"prompt": "boss_prompt"}},
        }
    )
    src = _write(tmp_path, files)

    stdout, _ = _run("convert_definitions", "--write", str(src))

    assert (
        "prompts/boss_prompt: tools entry helper stays in the prompt (a 0.1.0 subagent, run as "
        "before): resumable.receives_messages cannot be written on a 0.2.0 relationship"
    ) in stdout
    assert _read(src / "prompts" / "boss_prompt.json") == files["prompts/boss_prompt"]
    assert "type" not in _read(src / "agents" / "boss.json")
    # A 0.2.0 agent may run a prompt read as 0.1.0: the folder imports and runs as before.
    assert "6 created" in _run("import_definitions", str(src))[0]
