"""The AgentBuilder agents API doc's example definition files import unchanged.

``tests/agents_app/spec/agentbuilder_examples/*.ts`` are the doc's five "Complete Examples"
byte for byte (the first test checks them against ``../shared/spec``). They import as
``agents/<name>.ts`` beside JSON prompts and models, with ``maxTurns`` kept as the
side's turn cap and ``endConversationTool`` stored as ``endSessionTool``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents_app.base.code_registry import reset_registry
from agents_app.models import Agent
from agents_app.services.definitions.files import (
    DefinitionFilesInvalid,
    definitions_export,
    definitions_import,
)
from agents_app.services.definitions.rows import agent_definition
from runtime.definitions.source import SourceError, read_ts_definition
from runtime.tools.registry import Registry, define_tool

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).parent / "agentbuilder_examples"
DOC = Path(__file__).resolve().parents[4] / "shared" / "spec" / "agentbuilder-agents-api.txt"
PROMPTS = (
    "customer_support",
    "checkout_flow",
    "billing_expert",
    "debate_pro",
    "debate_con",
    "content_writer",
    "content_critic",
)
TOOLS = (
    "confirm_order",
    "complete_checkout",
    "resolve_billing",
    "conclude_debate",
    "approve_content",
)


@pytest.fixture(autouse=True)
def code_registry() -> Iterator[None]:
    async def tool(state: Any) -> str:
        return "ok"

    reset_registry(Registry(*(define_tool("Example.", tool, name=n) for n in TOOLS)))
    yield
    reset_registry(None)


def _tree(root: Path, agents: dict[str, str]) -> Path:
    for folder in ("agents", "prompts", "models"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    model = {"name": "m", "provider": "test", "model": "scripted"}
    (root / "models" / "m.json").write_text(json.dumps(model))
    for name in PROMPTS:
        body = {"name": name, "prompt": f"You are {name}.", "model": "m"}
        (root / "prompts" / f"{name}.json").write_text(json.dumps(body))
    for name, text in agents.items():
        (root / "agents" / name).write_text(text, encoding="utf-8")
    return root


def _examples() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.ts"))}


def test_spec_agentbuilder_example_files_are_the_docs_verbatim() -> None:
    doc = DOC.read_text(encoding="utf-8")
    found = re.findall(r"// agents/agents/(\w+)\.ts\n.*?\n\}\);\n", doc, re.S)
    assert len(found) == 5
    blocks = re.finditer(r"// agents/agents/(\w+)\.ts\n.*?\n\}\);\n", doc, re.S)
    assert {f"{m.group(1)}.ts": m.group(0) for m in blocks} == _examples()


def test_spec_agentbuilder_examples_import_unchanged(tmp_path: Path) -> None:
    report = definitions_import(directory=_tree(tmp_path, _examples()))
    assert sorted(Agent.objects.values_list("name", flat=True)) == [
        "billing_specialist",
        "checkout_agent",
        "debate_agent",
        "evaluation_agent",
        "support_agent",
    ]
    assert report is not None
    checkout = agent_definition(Agent.objects.get(name="checkout_agent"))
    # maxTurns is the turns the side may take, kept as such (not as maxSteps): issue #38.
    assert (checkout.side_a.max_turns, checkout.side_a.max_steps) == (30, None)
    assert checkout.side_a.end_session_tool == "complete_checkout"
    assert checkout.side_a.stop_tool == "confirm_order"
    assert checkout.side_a.stop_tool_response_property == "orderId"
    assert checkout.side_a.stop_on_response is False
    debate = agent_definition(Agent.objects.get(name="debate_agent"))
    assert debate.type == "dual_ai" and debate.max_session_turns == 20
    assert debate.side_b is not None and debate.side_b.end_session_tool == "conclude_debate"
    assert (debate.side_a.max_turns, debate.side_b.max_turns) == (10, 10)
    support = agent_definition(Agent.objects.get(name="support_agent"))
    assert support.icon == "/icons/support.svg" and support.tags == ["support", "customer-facing"]
    billing = agent_definition(Agent.objects.get(name="billing_specialist"))
    assert billing.expose_as_tool and billing.tool_description


def test_spec_agentbuilder_import_export_reimport_is_stable(tmp_path: Path) -> None:
    definitions_import(directory=_tree(tmp_path / "in", _examples()))
    out = tmp_path / "out"
    # The examples are spec 0.1.0 (``type``); export writes 0.2.0 unless asked (issue #54).
    definitions_export(directory=out, spec="0.1.0")
    exported = json.loads((out / "agents" / "checkout_agent.json").read_text())
    # Export writes the spec's names (maxTurns is one of ours); the AgentBuilder ones are
    # accepted on the way in.
    assert exported["sideA"]["maxTurns"] == 30 and "maxSteps" not in exported["sideA"]
    assert exported["sideA"]["endSessionTool"] == "complete_checkout"
    before = {a.name: agent_definition(a).dump() for a in Agent.objects.all()}
    definitions_import(directory=out)
    assert {a.name: agent_definition(a).dump() for a in Agent.objects.all()} == before


def test_spec_agentbuilder_manual_stop_condition_imports_as_stop_on_response_off(
    tmp_path: Path,
) -> None:
    text = (
        "import { defineAgent } from '@standardagents/spec';\n"
        "export default defineAgent({ name: 'manual', sideA: {\n"
        "  prompt: 'customer_support', manualStopCondition: true, maxTurns: 5 } });\n"
    )
    definitions_import(directory=_tree(tmp_path, {"manual.ts": text}))
    side = agent_definition(Agent.objects.get(name="manual")).side_a
    assert side.stop_on_response is False and side.max_turns == 5


@pytest.mark.parametrize(
    ("side", "message"),
    [
        ("manualStopCondition: true, stopOnResponse: true", "turns stopOnResponse off"),
        ("endConversationTool: 'a', endSessionTool: 'b'", "give one of them, not both"),
    ],
)
def test_spec_agentbuilder_conflicting_names_are_refused_with_the_reason(
    tmp_path: Path, side: str, message: str
) -> None:
    text = f"export default defineAgent({{ name: 'x', sideA: {{ prompt: 'customer_support', {side} }} }});"
    with pytest.raises(DefinitionFilesInvalid) as exc:
        definitions_import(directory=_tree(tmp_path, {"x.ts": text}))
    assert any(
        line.startswith("agents/x.ts: sideA: ") and message in line for line in exc.value.errors
    )
    assert not Agent.objects.exists()


def test_spec_agentbuilder_ts_values_computed_by_code_are_refused_with_the_line(
    tmp_path: Path,
) -> None:
    text = "const p = 'customer_support';\nexport default defineAgent({ name: 'x', sideA: { prompt: p } });\n"
    with pytest.raises(DefinitionFilesInvalid) as exc:
        definitions_import(directory=_tree(tmp_path, {"x.ts": text}))
    assert exc.value.errors[0].startswith("agents/x.ts: line 1: only imports and `export default")
    with pytest.raises(SourceError, match=r"line 1: `p` is not a literal value"):
        read_ts_definition(b"export default defineAgent({ sideA: { prompt: p } });", "agents")


def test_spec_agentbuilder_same_name_as_json_and_ts_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path, _examples())
    (root / "agents" / "support_agent.json").write_text(
        json.dumps({"name": "support_agent", "sideA": {"prompt": "customer_support"}})
    )
    with pytest.raises(DefinitionFilesInvalid) as exc:
        definitions_import(directory=root)
    assert "agents/support_agent: defined twice (.json and .ts); keep one file." in exc.value.errors
