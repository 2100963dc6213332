"""validateToolName: every name offered to a model follows the vendors' rule.

``[A-Za-z0-9_-]{1,64}``. A prompt or agent whose name breaks it may exist, but it is
refused, with the reason, wherever a definition would offer it to a model (a prompt's
``tools``, a side's stop / end-session tool, ``exposeAsTool``); a code tool with such a
name is refused when it is defined.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agents_app.models import Agent, Prompt
from runtime.core.tool_names import TOOL_NAME_MAX, validate_tool_name
from runtime.tools.registry import RegistryError, define_tool
from tests.agents_app.services.test_validation_rules import agent, errors, model, prompt, save

pytestmark = pytest.mark.django_db

RULE = "may use only letters, digits, '_' and '-', and are at most 64 characters"


@pytest.mark.parametrize("name", ["lookup", "get-weather", "A_1", "x" * TOOL_NAME_MAX])
def test_spec_validate_tool_name_accepts_the_vendors_alphabet(name: str) -> None:
    assert validate_tool_name(name) is None


@pytest.mark.parametrize(
    "name", ["billing.v2", "has space", "a/b", "mcp:x", "ünïcode", "x" * (TOOL_NAME_MAX + 1)]
)
def test_spec_validate_tool_name_refuses_other_names_with_the_rule(name: str) -> None:
    problem = validate_tool_name(name)
    assert problem is not None and RULE in problem and name in problem


def test_spec_tool_name_code_tool_with_an_invalid_name_is_refused_when_defined() -> None:
    with pytest.raises(RegistryError, match="'look.up' cannot be offered"):
        define_tool("Look up", lambda state: "x", name="look.up")


def test_spec_tool_name_prompt_listing_a_prompt_with_a_dotted_name_is_refused_at_save() -> None:
    listing = prompt("support_prompt", tools=["billing.v2", {"name": "billing.v2"}])[1]
    found = errors("prompts", listing)
    assert RULE in found["tools.0"] and RULE in found["tools.1"]
    # Through the file import too: the whole batch is refused, nothing is saved.
    from agents_app.services.definitions.files import DefinitionFilesInvalid, definitions_import

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "models").mkdir()
        (root / "prompts").mkdir()
        (root / "models" / "m.json").write_text(json.dumps(model()[1]))
        (root / "prompts" / "billing.v2.json").write_text(json.dumps(prompt("billing.v2")[1]))
        (root / "prompts" / "support_prompt.json").write_text(json.dumps(listing))
        with pytest.raises(DefinitionFilesInvalid) as exc:
            definitions_import(directory=root)
    assert any(
        line.startswith("prompts/support_prompt.json: tools.0: ") for line in exc.value.errors
    )
    assert not Prompt.objects.exists()


def test_spec_tool_name_dotted_prompt_not_offered_as_a_tool_saves() -> None:
    save(model(), prompt("billing.v2"))
    assert Prompt.objects.filter(name="billing.v2").exists()


def test_spec_tool_name_exposed_agent_needs_a_valid_tool_name() -> None:
    found = errors(
        "agents", agent(name="support.v2", exposeAsTool=True, toolDescription="Hand off")
    )
    assert found["name"].startswith("An agent exposed as a tool: ") and RULE in found["name"]
    assert "name" not in errors("agents", agent(name="support.v2"))


@pytest.mark.parametrize("prop", ["stopTool", "endSessionTool"])
def test_spec_tool_name_side_tools_follow_the_rule(prop: str) -> None:
    side: dict[str, Any] = {"prompt": "support_prompt", prop: "close.ticket"}
    if prop == "stopTool":
        side["stopToolResponseProperty"] = "id"
    found = errors("agents", agent(sideA=side))
    assert RULE in found[f"sideA.{prop}"]
    assert not Agent.objects.exists()


def test_spec_tool_name_provider_and_mcp_entries_are_not_checked_here() -> None:
    found = errors(
        "prompts", {"name": "p", "prompt": "x", "model": "m", "tools": ["provider:web_search"]}
    )
    assert "tools.0" not in found
