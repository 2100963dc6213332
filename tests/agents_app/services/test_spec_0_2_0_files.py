"""Issue #54 at the file door: spec 0.2.0 definitions through ``import_definitions``,
``export_definitions`` (0.2.0 by default, ``--spec 0.1.0`` on request) and
``convert_definitions``, as a team keeping them in git sees them (what the commands print,
the files they write, what the API then lists). Rows of
shared/reference/spec-0.2.0-surface.md: A1, A6, A8, A9, B1, B2, C1, and items 7 and 8.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents_app.models import Agent, EnvValue, LanguageModel, Prompt
from agents_app.services.definitions.rows import agent_definition
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

MODEL = {"name": "m", "provider": "test", "model": "scripted"}
PROMPT = {"name": "p", "model": "m", "prompt": "You help.", "includeChat": True}


def _write(root: Path, files: dict[str, Any]) -> Path:
    for label, data in files.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return root


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


# --- A1 ----------------------------------------------------------------------------------------


def test_A1_a_0_2_0_agent_with_a_human_side_b_imports_and_lists_its_backings(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    agent = {
        "name": "helpdesk",
        "sideA": {"prompt": "p", "label": "Helpdesk"},
        "sideB": {"human": True, "label": "Customer"},
    }
    src = _write(tmp_path, {"models/m": MODEL, "prompts/p": PROMPT, "agents/helpdesk": agent})

    stdout, _ = _run("import_definitions", str(src))

    assert f"Imported 3 definitions from {src}: 3 created, 0 updated." in stdout
    row = Agent.objects.get(name="helpdesk")
    assert (row.spec_version, row.type, row.side_b_label) == ("0.2.0", "ai_human", "Customer")
    [listed] = as_(alice).get("/api/agents").json()["agents"]
    assert (listed["side_a_backing"], listed["side_b_backing"]) == ("prompt", "human")
    # Export (0.2.0) writes it back as it came.
    _run("export_definitions", str(tmp_path / "out"))
    assert _read(tmp_path / "out" / "agents" / "helpdesk.json") == agent


def test_A1_type_beside_0_2_0_keys_is_refused_at_import_with_a_sentence(tmp_path: Path) -> None:
    agent = {
        "name": "a",
        "type": "dual_ai",
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
        "primary": False,
    }
    src = _write(tmp_path, {"models/m": MODEL, "prompts/p": PROMPT, "agents/a": agent})

    stderr = _fails("import_definitions", str(src))

    assert (
        "agents/a.json: type: type is spec 0.1.0's way to say who is on each side, and primary "
        "belong to spec 0.2.0" in stderr
    )
    assert not Agent.objects.exists()


# --- A6, A8, A9 --------------------------------------------------------------------------------


def test_A6_a_non_primary_agent_is_listed_with_primary_false_and_reached_by_name(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    inner = {"name": "inner", "sideA": {"prompt": "p"}, "sideB": {"human": True}, "primary": False}
    src = _write(tmp_path, {"models/m": MODEL, "prompts/p": PROMPT, "agents/inner": inner})
    _run("import_definitions", str(src))

    [listed] = as_(alice).get("/api/agents").json()["agents"]
    assert (listed["name"], listed["primary"]) == ("inner", False)
    created = as_(alice).post_json("/api/threads", {"agent_id": "inner"})
    assert created.status_code == 200 and created.json()["agent_id"] == "inner"
    _run("export_definitions", str(tmp_path / "out"))
    assert _read(tmp_path / "out" / "agents" / "inner.json")["primary"] is False


def test_A8_agent_env_and_its_old_name_tenvs_fill_the_agent_tier(tmp_path: Path) -> None:
    files = {
        "models/m": MODEL,
        "prompts/p": PROMPT,
        "agents/new": {
            "name": "new",
            "sideA": {"prompt": "p"},
            "sideB": {"human": True},
            "env": {"REGION": "eu"},
        },
        "agents/old": {
            "name": "old",
            "type": "ai_human",
            "sideA": {"prompt": "p"},
            "tenvs": {"TIER": "gold"},
        },
    }
    _run("import_definitions", str(_write(tmp_path / "src", files)))

    tier = EnvValue.objects.filter(scope=EnvValue.Scope.AGENT)
    assert {(v.agent.name, v.key, v.value) for v in tier} == {
        ("new", "REGION", "eu"),
        ("old", "TIER", "gold"),
    }
    # 0.2.0 writes env (secrets withheld as null); 0.1.0 writes tenvs.
    _run("export_definitions", str(tmp_path / "two"))
    _run("export_definitions", "--spec", "0.1.0", str(tmp_path / "one"))
    assert _read(tmp_path / "two" / "agents" / "old.json")["env"] == {"TIER": None}
    assert _read(tmp_path / "one" / "agents" / "old.json")["tenvs"] == {"TIER": None}

    both = {
        "name": "x",
        "type": "ai_human",
        "sideA": {"prompt": "p"},
        "env": {"A": "1"},
        "tenvs": {"A": "2"},
    }
    stderr = _fails(
        "import_definitions", str(_write(tmp_path / "bad", {**files, "agents/x": both}))
    )
    assert "agents/x.json: tenvs: tenvs is the old name of env; give one of them, not both." in (
        stderr
    )


def test_A9_packaging_metadata_is_kept_through_import_and_export(tmp_path: Path) -> None:
    meta = {"packageName": "@acme/helpdesk", "version": "1.2.0", "author": "Acme", "license": "MIT"}
    agent = {"name": "a", "sideA": {"prompt": "p"}, "sideB": {"human": True}, **meta}
    _run(
        "import_definitions",
        str(_write(tmp_path, {"models/m": MODEL, "prompts/p": PROMPT, "agents/a": agent})),
    )

    assert Agent.objects.get(name="a").packaging == meta
    _run("export_definitions", str(tmp_path / "out"))
    assert _read(tmp_path / "out" / "agents" / "a.json") == agent
    # 0.1.0 has no place for them: that export is refused with the field.
    stderr = _fails("export_definitions", "--spec", "0.1.0", str(tmp_path / "old"))
    assert "agents/a.json: packageName: 0.1.0 has no packageName." in stderr


# --- B1, B2 ------------------------------------------------------------------------------------


def test_B1_prompt_variables_are_stored_exported_and_listed_by_the_variable_scans(
    tmp_path: Path, as_: Any, ops: Any
) -> None:
    variables = [
        {"name": "SHOP_ID", "type": "text", "required": True, "description": "Which shop"},
        {"name": "SHOP_TOKEN", "type": "secret", "required": False, "scoped": True},
    ]
    prompt = {**PROMPT, "variables": variables}
    agent = {"name": "a", "sideA": {"prompt": "p"}, "sideB": {"human": True}}
    _run(
        "import_definitions",
        str(_write(tmp_path, {"models/m": MODEL, "prompts/p": prompt, "agents/a": agent})),
    )

    assert Prompt.objects.get(name="p").variables == variables
    _run("export_definitions", str(tmp_path / "out"))
    assert _read(tmp_path / "out" / "prompts" / "p.json")["variables"] == variables
    listed = as_(ops).get("/api/variables/agents/a").json()["variables"]
    by_name = {v["property"]: v for v in listed}
    assert by_name["SHOP_ID"]["declared"] == [{"type": "prompt", "name": "p"}]
    assert (by_name["SHOP_ID"]["type"], by_name["SHOP_ID"]["required"]) == ("text", True)
    assert by_name["SHOP_ID"]["description"] == "Which shop"
    assert (by_name["SHOP_TOKEN"]["type"], by_name["SHOP_TOKEN"]["scoped"]) == ("secret", True)
    assert by_name["SHOP_TOKEN"]["defined"] is False
    # 0.1.0 prompts declare none: that export is refused with the field.
    stderr = _fails("export_definitions", "--spec", "0.1.0", str(tmp_path / "old"))
    assert "prompts/p.json: variables: 0.1.0 prompts declare no variables." in stderr


def test_B2_prompt_expose_as_tool_and_tenvs_are_read_as_deprecated_names(tmp_path: Path) -> None:
    prompt = {**PROMPT, "exposeAsTool": True, "tenvs": {"GREETING": "hi"}}
    _run(
        "import_definitions",
        str(_write(tmp_path / "src", {"models/m": MODEL, "prompts/p": prompt})),
    )

    assert EnvValue.objects.get(scope=EnvValue.Scope.PROMPT, key="GREETING").value == "hi"
    _run("export_definitions", str(tmp_path / "out"))
    exported = _read(tmp_path / "out" / "prompts" / "p.json")
    assert "exposeAsTool" not in exported and exported["env"] == {"GREETING": None}
    # false would say something every prompt is not: refused, with the field.
    hidden = {**PROMPT, "name": "q", "exposeAsTool": False}
    stderr = _fails(
        "import_definitions",
        str(_write(tmp_path / "bad", {"models/m": MODEL, "prompts/q": hidden})),
    )
    assert "prompts/q.json: exposeAsTool: Every prompt can be called as a tool" in stderr


# --- C1 ----------------------------------------------------------------------------------------


def test_C1_capabilities_in_0_2_0_names_import_export_and_gate_the_response_schema(
    tmp_path: Path,
) -> None:
    caps = {
        "supportsImages": True,
        "supportsToolCalls": True,
        "supportsStreaming": True,
        "supportsJsonMode": False,
        "maxContextTokens": 128000,
        "maxOutputTokens": 16384,
        "reasoningLevels": {"0": None, "50": "medium"},
    }
    model = {**MODEL, "capabilities": caps}
    old = {
        "name": "old",
        "provider": "test",
        "model": "s",
        "capabilities": {"vision": False, "functionCalling": True},
    }
    _run(
        "import_definitions", str(_write(tmp_path / "src", {"models/m": model, "models/old": old}))
    )

    _run("export_definitions", str(tmp_path / "two"))
    assert _read(tmp_path / "two" / "models" / "m.json")["capabilities"] == caps
    assert _read(tmp_path / "two" / "models" / "old.json")["capabilities"] == {
        "supportsImages": False,
        "supportsToolCalls": True,
    }
    stderr = _fails("export_definitions", "--spec", "0.1.0", str(tmp_path / "one"))
    assert (
        "models/m.json: capabilities.supportsStreaming: 0.1.0 models have no supportsStreaming."
        in (stderr)
    )
    # supportsJsonMode: false refuses a response schema, as structuredOutputs: false does.
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    prompt = {**PROMPT, "responseSchema": schema}
    stderr = _fails(
        "import_definitions",
        str(_write(tmp_path / "bad", {"models/m": model, "prompts/p": prompt})),
    )
    assert "prompts/p.json: responseSchema: Model 'm' (provider 'test') cannot answer with" in (
        stderr
    )


def test_C1_reasoning_levels_refuse_an_effort_the_model_does_not_offer(
    tmp_path: Path, as_: Any, ops: Any
) -> None:
    model = {**MODEL, "capabilities": {"reasoningLevels": {"0": None, "33": "low", "66": "medium"}}}
    prompt = {**PROMPT, "reasoning": {"effort": "high"}}
    stderr = _fails(
        "import_definitions", str(_write(tmp_path, {"models/m": model, "prompts/p": prompt}))
    )
    assert (
        "prompts/p.json: reasoning.effort: Model 'm' offers the reasoning efforts low, medium "
        "(its reasoningLevels); 'high' is not one of them." in stderr
    )
    # The model's side: levels that leave out what a stored prompt asks for.
    LanguageModel.objects.create(name="m2", provider="test", model="s")
    assert (
        as_(ops)
        .post_json(
            "/api/prompts", {**PROMPT, "name": "q", "model": "m2", "reasoning": {"effort": "high"}}
        )
        .status_code
        == 201
    )
    refused = as_(ops).put(
        "/api/models/m2",
        {"capabilities": {"reasoningLevels": {"0": None, "50": "low"}}},
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"]["capabilities.reasoningLevels"].startswith(
        "Prompts 'q' ask this model for reasoning these levels leave out (offered: low)."
    )


def test_C1_the_capabilities_answer_can_be_saved_as_is(
    as_: Any, ops: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents_app.api import model_catalog as api
    from runtime.providers.discovery.types import ModelCapabilityHints, ProviderModelInfo

    listed = ProviderModelInfo(
        id="gpt-x",
        name="GPT X",
        context_length=128000,
        max_output_tokens=16384,
        capabilities=ModelCapabilityHints(
            vision=True, function_calling=True, structured_outputs=True
        ),
    )
    monkeypatch.setattr(api.catalog, "list_provider_models", lambda *a, **k: [listed])
    answer = as_(ops).post_json(
        "/api/models/capabilities", {"provider": "openai", "modelId": "gpt-x"}
    )
    caps = answer.json()["capabilities"]
    assert caps == {
        "supportsImages": True,
        "supportsToolCalls": True,
        "supportsJsonMode": True,
        "maxContextTokens": 128000,
        "maxOutputTokens": 16384,
    }

    saved = as_(ops).post_json(
        "/api/models", {"name": "x", "provider": "openai", "model": "gpt-x", "capabilities": caps}
    )

    assert saved.status_code == 201, saved.content
    assert LanguageModel.objects.get(name="x").capabilities == caps


# --- 7: export in either generation ------------------------------------------------------------


def test_7_export_writes_0_2_0_by_default_and_0_1_0_with_spec(tmp_path: Path) -> None:
    debate = {
        "name": "d",
        "type": "dual_ai",
        "maxSessionTurns": 4,
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
    }
    chat = {"name": "c", "type": "ai_human", "sideA": {"prompt": "p"}}
    files = {"models/m": MODEL, "prompts/p": PROMPT, "agents/d": debate, "agents/c": chat}
    _run("import_definitions", str(_write(tmp_path / "src", files)))

    stdout, _ = _run("export_definitions", str(tmp_path / "two"))
    _run("export_definitions", "--spec", "0.1.0", str(tmp_path / "one"))

    assert "Exported 4 definitions (spec 0.2.0)" in stdout
    assert _read(tmp_path / "two" / "agents" / "d.json") == {
        "name": "d",
        "maxSessionTurns": 2,
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
    }
    assert _read(tmp_path / "two" / "agents" / "c.json") == {
        "name": "c",
        "sideA": {"prompt": "p"},
        "sideB": {"human": True},
    }
    assert _read(tmp_path / "one" / "agents" / "d.json") == debate
    assert _read(tmp_path / "one" / "agents" / "c.json") == chat


def test_7_a_person_on_side_a_is_refused_for_a_0_1_0_export(tmp_path: Path) -> None:
    agent = {"name": "kiosk", "sideA": {"human": True}, "sideB": {"prompt": "p"}}
    _run(
        "import_definitions",
        str(
            _write(
                tmp_path / "src", {"models/m": MODEL, "prompts/p": PROMPT, "agents/kiosk": agent}
            )
        ),
    )

    stderr = _fails("export_definitions", "--spec", "0.1.0", str(tmp_path / "one"))

    assert (
        "agents/kiosk.json: sideA.human: A person on side A cannot be written in 0.1.0, where "
        "the person of an ai_human agent is always side B. (spec 0.1.0; nothing was exported)"
    ) in stderr
    assert not (tmp_path / "one").exists()


# --- 8: convert_definitions ---------------------------------------------------------------------


def test_8_convert_definitions_prints_each_change_and_writes_only_with_write(
    tmp_path: Path,
) -> None:
    debate = {
        "name": "d",
        "type": "dual_ai",
        "maxSessionTurns": 4,
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
    }
    chat = {"name": "c", "type": "ai_human", "sideA": {"prompt": "p"}, "tenvs": {"K": "v"}}
    model = {**MODEL, "capabilities": {"vision": True}}
    src = _write(
        tmp_path, {"models/m": model, "prompts/p": PROMPT, "agents/d": debate, "agents/c": chat}
    )
    before = {p: p.read_text() for p in src.rglob("*.json")}

    dry, _ = _run("convert_definitions", str(src))

    assert dry.splitlines() == [
        "models/m.json:",
        "  - capabilities.vision → supportsImages",
        "agents/c.json:",
        "  - type ai_human → sideB: {human: true} (type removed)",
        "  - tenvs → env",
        "agents/d.json:",
        "  - type dual_ai → two prompt-backed sides (type removed)",
        "  - maxSessionTurns 4 (turns) → 2 (exchanges, a turn of each side)",
        "prompts/p.json: already 0.2.0, unchanged.",
        "Dry run: 3 files would change. Run again with --write to rewrite them.",
    ]
    assert {p: p.read_text() for p in src.rglob("*.json")} == before

    written, _ = _run("convert_definitions", "--write", str(src))

    assert "Converted 3 files to spec 0.2.0." in written
    assert _read(src / "agents" / "c.json") == {
        "name": "c",
        "sideA": {"prompt": "p"},
        "sideB": {"human": True},
        "env": {"K": "v"},
    }
    _run("import_definitions", str(src))
    assert agent_definition(Agent.objects.get(name="d")).spec == "0.2.0"
    assert _run("convert_definitions", str(src))[0].endswith(
        "Dry run: 0 files would change. Run again with --write to rewrite them.\n"
    )


def test_8_convert_definitions_refuses_what_0_2_0_cannot_say_and_writes_nothing(
    tmp_path: Path,
) -> None:
    odd = {
        "name": "d",
        "type": "dual_ai",
        "maxSessionTurns": 5,
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "p"},
    }
    chat = {"name": "c", "type": "ai_human", "sideA": {"prompt": "p"}}
    src = _write(
        tmp_path, {"models/m": MODEL, "prompts/p": PROMPT, "agents/d": odd, "agents/c": chat}
    )

    stderr = _fails("convert_definitions", "--write", str(src))

    assert stderr.startswith(
        "agents/d.json: maxSessionTurns: 5 turns cannot be written in 0.2.0, which counts exchanges"
    )
    assert _read(src / "agents" / "c.json") == chat
