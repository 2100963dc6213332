"""Definitions with session tools (``SessionToolConfig``) and subagent relationship options
import from files, are stored, and export unchanged; bad ones are refused with a reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents_app.models import Agent, PromptTool
from agents_app.services.definitions.rows import agent_definition
from runtime.core.spec import AgentDefinition
from runtime.definitions.validation import parse_and_validate
from tests.agents_app.services.test_definition_files import import_fails, run, write_tree

pytestmark = pytest.mark.django_db

TREE: dict[str, dict[str, Any]] = {
    "models/m.json": {"name": "m", "provider": "test", "model": "scripted"},
    "prompts/child_prompt.json": {"name": "child_prompt", "prompt": "Work.", "model": "m"},
    "prompts/parent_prompt.json": {
        "name": "parent_prompt",
        "prompt": "Delegate.",
        "model": "m",
        "tools": [
            {
                "name": "child",
                "initAttachmentsProperty": "files",
                "initAgentNameProperty": "label",
                "env": {"MODE": "fast"},
                "blocking": False,
                "scopedEnv": ["REGION"],
                "parentCommunication": "explicit",
                "hidden": True,
            }
        ],
    },
    "agents/child.json": {
        "name": "child",
        "type": "ai_human",
        "sideA": {
            "prompt": "child_prompt",
            "sessionStop": {
                "name": "finish",
                "messageProperty": "summary",
                "attachmentsProperty": "files",
            },
            "sessionFail": {"name": "give_up", "messageProperty": "reason"},
            "sessionStatus": {"name": "report_status"},
        },
    },
    "agents/parent.json": {"name": "parent", "sideA": {"prompt": "parent_prompt"}},
}


def test_spec_session_tools_and_subagent_options_import_store_and_export(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", TREE)))
    stored = Agent.objects.get(name="child").side_a_session_tools
    assert stored["sessionFail"] == {"name": "give_up", "messageProperty": "reason"}
    entry = PromptTool.objects.get(prompt__name="parent_prompt")
    assert (entry.scoped_env, entry.parent_communication, entry.hidden) == (
        ["REGION"],
        "explicit",
        True,
    )
    side = agent_definition(Agent.objects.get(name="child")).side_a
    assert side.session_stop is not None and side.session_stop.attachments_property == "files"
    # The files are written for spec 0.1.0; export writes 0.2.0 unless asked (issue #54).
    run("export_definitions", "--spec", "0.1.0", str(tmp_path / "out"))
    for rel in ("agents/child.json", "prompts/parent_prompt.json"):
        assert json.loads((tmp_path / "out" / rel).read_text()) == TREE[rel], rel


def test_A11_session_tool_bare_string_imports_as_its_object_form(tmp_path: Path) -> None:
    tree = dict(TREE)
    tree["agents/child.json"] = {
        "name": "child",
        "sideA": {"prompt": "child_prompt", "sessionStop": "finish"},
    }
    run("import_definitions", str(write_tree(tmp_path / "src", tree)))
    assert Agent.objects.get(name="child").side_a_session_tools == {
        "sessionStop": {"name": "finish"}
    }


def test_spec_session_tools_refused_with_a_reason(tmp_path: Path) -> None:
    tree = dict(TREE)
    tree["agents/child.json"] = {
        "name": "child",
        "sideA": {
            "prompt": "child_prompt",
            "sessionStop": {"name": "done"},
            "sessionFail": {"name": "done", "messageProperty": "m", "attachmentsProperty": "m"},
            "sessionStatus": {"name": "s", "colour": "red"},
        },
    }
    errors = "\n".join(import_fails(write_tree(tmp_path / "src", tree)))
    assert "sideA.sessionStatus.colour" in errors and "Unknown property 'colour'" in errors


def test_spec_session_tool_rules() -> None:
    data = {
        "name": "child",
        "sideA": {
            "prompt": "p",
            "sessionStop": {"name": "done"},
            "sessionFail": {"name": "done", "messageProperty": "m", "attachmentsProperty": "m"},
        },
    }
    obj, errors = parse_and_validate("agents", data)
    assert isinstance(obj, AgentDefinition)
    messages = {e.path: e.message for e in errors}
    assert "already this side's sessionStop" in messages["sideA.sessionFail.name"]
    assert "must differ" in messages["sideA.sessionFail.attachmentsProperty"]
    _, errors = parse_and_validate(
        "prompts",
        {"name": "p", "model": "m", "tools": [{"name": "c", "parentCommunication": "loud"}]},
    )
    assert [e.path for e in errors] == ["tools.0.parentCommunication"]
