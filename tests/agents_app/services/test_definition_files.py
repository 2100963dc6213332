"""import_definitions / export_definitions: definitions as a directory of JSON files."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents_app.base.code_registry import reset_registry
from agents_app.management.commands.import_definitions import Command as ImportCommand
from agents_app.models import (
    Agent,
    EnvValue,
    LanguageModel,
    ModelFallback,
    Prompt,
    PromptPart,
    PromptTool,
)
from agents_app.services.definitions.demo import DEMO_DIR
from runtime.tools.registry import Registry, define_hook, define_tool

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def code_registry() -> Iterator[None]:
    """The code tools and hooks the fixture definitions name, so names are checked strictly."""

    async def tool(state: Any) -> str:
        return "ok"

    async def hook(*args: Any) -> None:
        return None

    reset_registry(
        Registry(
            *(
                define_tool("Demo.", tool, name=n)
                for n in ("lookup_order", "classify", "close_ticket")
            ),
            define_hook("filter_messages", hook, id="filter_messages"),
            define_hook("after_create_message", hook, id="after_create_message"),
        )
    )
    yield
    reset_registry(None)


# Every field of every definition kind, written as a team would keep it in git.
RICH: dict[str, dict[str, Any]] = {
    "models/router_model.json": {
        "name": "router_model",
        "provider": "openrouter",
        "model": "openai/gpt-4o-mini",
        "includedProviders": ["openai", "azure"],
        "fallbacks": ["backup_model", "scripted_model"],
        "inputPrice": 0.15,
        "outputPrice": 0.6,
        "cachedPrice": 0.075,
        "capabilities": {"vision": True, "functionCalling": True, "structuredOutputs": False},
        "baseUrl": "https://openrouter.example/api/v1",
    },
    "models/backup_model.json": {
        "name": "backup_model",
        "provider": "anthropic",
        "model": "claude-sonnet-4",
    },
    "models/scripted_model.json": {
        "name": "scripted_model",
        "provider": "test",
        "model": "scripted",
        "script": [
            {
                "content": "Checking…",
                "toolCalls": [
                    {"name": "lookup_order", "arguments": {"order_id": "A-1001"}, "id": "call_1"},
                    {"name": "helper_prompt", "arguments": '{"question": "why?"}'},
                ],
                "reasoningContent": "The customer wants an order status.",
                "finishReason": "tool_calls",
                "usage": {
                    "promptTokens": 120,
                    "completionTokens": 9,
                    "reasoningTokens": 4,
                    "cachedTokens": 64,
                },
                "delayMs": 5,
            },
            {"error": {"message": "Upstream overloaded", "code": "overloaded", "status": 529}},
            {
                "content": "Shipped.",
                "expectInput": {
                    "containsMessage": "order",
                    "containsToolResult": {"toolName": "lookup_order", "resultContains": "A-1001"},
                    "messageCount": 4,
                    "systemPromptContains": "support",
                },
            },
        ],
        "streaming": {"chunkSize": 4, "chunkDelayMs": 10},
    },
    "prompts/style.json": {"name": "style", "prompt": "Be brief.", "model": "backup_model"},
    "prompts/helper_prompt.json": {
        "name": "helper_prompt",
        "toolDescription": "Answers a side question.",
        "prompt": "You answer side questions.",
        "model": "scripted_model",
    },
    "prompts/rich_prompt.json": {
        "name": "rich_prompt",
        "toolDescription": "Support with every option.",
        "prompt": [
            {"type": "text", "content": "You are support for ÄÖÜ Teapots."},
            {"type": "include", "prompt": "style"},
            {"type": "env", "property": "COMPANY_NAME"},
        ],
        "model": "router_model",
        "includeChat": True,
        "includePastTools": True,
        "parallelToolCalls": False,
        "toolChoice": "required",
        "requiredSchema": {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
        "tools": [
            "lookup_order",
            {
                "name": "helper_prompt",
                "includeTextResponse": False,
                "includeToolCalls": False,
                "includeErrors": False,
                "initUserMessageProperty": "question",
                "initAttachmentsProperty": "files",
            },
            {
                "name": "helper_agent",
                "initAgentNameProperty": "agent_name",
                "env": {"REGION": "eu"},
                "optional": "HELPER_ENABLED",
                "immediate": True,
                "blocking": False,
                "resumable": {"receives_messages": "side_b", "maxInstances": 3},
            },
        ],
        "reasoning": {"effort": "high", "maxTokens": 2048, "exclude": False, "include": True},
        "recentImageThreshold": 3,
        "hooks": ["filter_messages"],
        "stepBudgetWarning": False,
    },
    "agents/helper_agent.json": {
        "name": "helper_agent",
        "type": "dual_ai",
        "title": "Helper",
        "maxSessionTurns": 6,
        "sideA": {
            "prompt": "helper_prompt",
            "label": "Asker",
            "stopOnResponse": False,
            "stopTool": "classify",
            "stopToolResponseProperty": "intent",
            "maxSteps": 5,
            "endSessionTool": "close_ticket",
        },
        "sideB": {"prompt": "rich_prompt", "label": "Answerer", "maxSteps": 2},
        "exposeAsTool": True,
        "toolDescription": "Hand off to the helper.",
        "description": "Exercises every agent field.",
        "icon": "/icons/helper.svg",
        "tags": ["demo", "full"],
        "hooks": ["after_create_message"],
    },
    "agents/plain_agent.json": {
        "name": "plain_agent",
        "type": "ai_human",
        "sideA": {"prompt": "style"},
    },
}


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content, indent=2)
        path.write_text(text, encoding="utf-8")
    return root


def read_tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(command: str, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def import_fails(directory: Path) -> list[str]:
    """Run a failing import; return its stderr lines (the errors), checking the exit status."""
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_definitions", str(directory), stdout=io.StringIO(), stderr=err)
    assert exc.value.returncode == 1
    assert "Nothing was imported" in str(exc.value)
    assert "Traceback" not in err.getvalue()
    return err.getvalue().splitlines()


def wipe_definitions() -> None:
    # PROTECT foreign keys: agents before prompts before models.
    Agent.objects.all().delete()
    PromptPart.objects.all().delete()
    PromptTool.objects.all().delete()
    Prompt.objects.all().delete()
    ModelFallback.objects.all().delete()
    LanguageModel.objects.all().delete()


def counts() -> tuple[int, ...]:
    return tuple(
        m.objects.count()
        for m in (LanguageModel, ModelFallback, Prompt, PromptPart, PromptTool, Agent, EnvValue)
    )


# --- round trip ---------------------------------------------------------------------------


def test_rich_definitions_round_trip_through_files(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", RICH)))
    run("export_definitions", str(tmp_path / "first"))
    first = read_tree(tmp_path / "first")
    assert sorted(first) == sorted(RICH)

    wipe_definitions()
    run("import_definitions", str(tmp_path / "first"))
    run("export_definitions", str(tmp_path / "second"))
    assert read_tree(tmp_path / "second") == first


def test_export_holds_every_field_as_the_spec_writes_it(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", RICH)))
    # RICH is written for spec 0.1.0; export writes 0.2.0 unless asked (issue #54).
    run("export_definitions", "--spec", "0.1.0", str(tmp_path / "out"))
    for rel, expected in RICH.items():
        assert json.loads((tmp_path / "out" / rel).read_text()) == expected, rel


def test_demo_round_trips(tmp_path: Path) -> None:
    run("import_definitions", str(DEMO_DIR))
    run("export_definitions", str(tmp_path / "first"))
    wipe_definitions()
    run("import_definitions", str(tmp_path / "first"))
    run("export_definitions", str(tmp_path / "second"))
    assert read_tree(tmp_path / "second") == read_tree(tmp_path / "first")
    shipped = {str(p.relative_to(DEMO_DIR)) for p in DEMO_DIR.rglob("*.json")}
    assert set(read_tree(tmp_path / "first")) == shipped


def test_export_is_pretty_stable_json_with_a_trailing_newline(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", RICH)))
    run("export_definitions", "--spec", "0.1.0", str(tmp_path / "a"))
    run("export_definitions", "--spec", "0.1.0", str(tmp_path / "b"))
    assert read_tree(tmp_path / "a") == read_tree(tmp_path / "b")
    text = (tmp_path / "a" / "agents" / "plain_agent.json").read_text()
    assert text == (
        '{\n  "name": "plain_agent",\n  "type": "ai_human",\n  "sideA": {\n'
        '    "prompt": "style"\n  }\n}\n'
    )
    assert "ÄÖÜ" in (tmp_path / "a" / "prompts" / "rich_prompt.json").read_text()


def test_export_overwrites_only_its_own_files(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", RICH)))
    out = write_tree(
        tmp_path / "out",
        {"README.md": "ours", "agents/old_agent.json": "{}", "agents/plain_agent.json": "{}"},
    )
    stdout, _ = run("export_definitions", str(out))
    assert (out / "README.md").read_text() == "ours"
    assert (out / "agents" / "old_agent.json").read_text() == "{}"
    assert json.loads((out / "agents" / "plain_agent.json").read_text())["name"] == "plain_agent"
    assert "agents/old_agent.json: no such definition here" in stdout
    assert f"Exported {len(RICH)} definitions" in stdout
    assert f"{len(RICH) - 1} created, 1 updated, 0 unchanged" in stdout


def test_export_reports_unchanged_files(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", RICH)))
    run("export_definitions", str(tmp_path / "out"))
    stdout, _ = run("export_definitions", str(tmp_path / "out"))
    assert f"0 created, 0 updated, {len(RICH)} unchanged" in stdout


def test_export_into_a_file_path_is_an_error(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("export_definitions", str(target), stdout=io.StringIO(), stderr=err)
    assert "not a directory" in err.getvalue()


# --- secrets ------------------------------------------------------------------------------


def test_secret_env_values_are_exported_as_null_and_null_keeps_them(tmp_path: Path) -> None:
    files = {
        **RICH,
        "prompts/style.json": {**RICH["prompts/style.json"], "env": {"API_TOKEN": "s3cret"}},
        "agents/plain_agent.json": {**RICH["agents/plain_agent.json"], "tenvs": {"TIER": "gold"}},
    }
    run("import_definitions", str(write_tree(tmp_path / "src", files)))
    run("export_definitions", "--spec", "0.1.0", str(tmp_path / "out"))
    exported = read_tree(tmp_path / "out")
    assert "s3cret" not in "".join(exported.values())
    assert "gold" not in "".join(exported.values())
    assert json.loads(exported["prompts/style.json"])["env"] == {"API_TOKEN": None}
    assert json.loads(exported["agents/plain_agent.json"])["tenvs"] == {"TIER": None}

    run("import_definitions", str(tmp_path / "out"))
    assert EnvValue.objects.get(key="API_TOKEN").value == "s3cret"
    assert EnvValue.objects.get(key="TIER").value == "gold"


def test_text_env_values_are_exported(tmp_path: Path) -> None:
    run("import_definitions", str(write_tree(tmp_path / "src", RICH)))
    row = EnvValue(
        scope=EnvValue.Scope.PROMPT,
        prompt=Prompt.objects.get(name="style"),
        key="GREETING",
        value_type=EnvValue.Type.TEXT,
    )
    row.value = "Hello"
    row.save()
    run("export_definitions", str(tmp_path / "out"))
    exported = json.loads((tmp_path / "out" / "prompts" / "style.json").read_text())
    assert exported["env"] == {"GREETING": "Hello"}


def test_non_text_tenvs_are_stored_as_json(tmp_path: Path) -> None:
    agent = {**RICH["agents/plain_agent.json"], "tenvs": {"LIMIT": 5, "FLAGS": {"beta": True}}}
    run("import_definitions", str(write_tree(tmp_path, {**RICH, "agents/plain_agent.json": agent})))
    assert EnvValue.objects.get(key="LIMIT").value == "5"
    assert EnvValue.objects.get(key="FLAGS").value == '{"beta": true}'


# --- import: idempotent, all or nothing ----------------------------------------------------------


def test_reimport_updates_without_duplicates(tmp_path: Path) -> None:
    src = write_tree(tmp_path, RICH)
    stdout, _ = run("import_definitions", str(src))
    assert f"Imported {len(RICH)} definitions from {src}: {len(RICH)} created, 0 updated." in stdout
    before = counts()

    stdout, _ = run("import_definitions", str(src))
    assert f"0 created, {len(RICH)} updated." in stdout
    assert counts() == before

    write_tree(
        src, {"agents/plain_agent.json": {**RICH["agents/plain_agent.json"], "title": "New"}}
    )
    run("import_definitions", str(src))
    assert Agent.objects.get(name="plain_agent").title == "New"
    assert counts() == before


def test_one_bad_file_among_good_ones_writes_nothing_and_lists_every_error(tmp_path: Path) -> None:
    files = {
        **RICH,
        "agents/support_agent.json": {"name": "support_agent", "sideA": {"prompt": "nope"}},
        "prompts/broken.json": {"name": "broken", "model": "missing_model", "toolChoice": "x"},
        "models/bad.json": '{"name": "bad", "provider": "test",\n  "model": }',
    }
    lines = import_fails(write_tree(tmp_path, files))
    assert counts() == (0, 0, 0, 0, 0, 0, 0)
    assert lines == [
        "models/bad.json: invalid JSON at line 2, column 12: Expecting value.",
        "prompts/broken.json: toolChoice: Tool choice must be one of: 'auto', 'none' or 'required'.",
        "agents/support_agent.json: sideA.prompt: Prompt 'nope' does not exist.",
    ]


def test_reference_errors_name_file_and_field(tmp_path: Path) -> None:
    files = {
        **RICH,
        "prompts/style.json": {**RICH["prompts/style.json"], "model": "gone_model"},
        "models/backup_model.json": {**RICH["models/backup_model.json"], "fallbacks": ["x"]},
    }
    assert import_fails(write_tree(tmp_path, files)) == [
        "models/backup_model.json: fallbacks.0: Fallback model 'x' does not exist.",
        "prompts/style.json: model: Model 'gone_model' does not exist.",
    ]
    assert not LanguageModel.objects.exists()


def test_include_cycle_is_reported(tmp_path: Path) -> None:
    files = {
        **RICH,
        "prompts/style.json": {
            **RICH["prompts/style.json"],
            "prompt": [{"type": "include", "prompt": "rich_prompt"}],
        },
    }
    lines = import_fails(write_tree(tmp_path, files))
    assert (
        "prompts/style.json: prompt: Prompt includes form a cycle: style → rich_prompt → style."
        in lines
    )
    assert any(
        line.startswith("prompts/rich_prompt.json: prompt: Prompt includes form a cycle")
        for line in lines
    )


def test_unknown_provider_is_reported(tmp_path: Path) -> None:
    files = {
        **RICH,
        "models/backup_model.json": {**RICH["models/backup_model.json"], "provider": "claude"},
    }
    assert import_fails(write_tree(tmp_path, files)) == [
        "models/backup_model.json: provider: Provider must be one of: 'openai', 'openrouter', "
        "'anthropic', 'google', 'groq', 'xai', 'cerebras', 'deepinfra', 'novita', 'cloudflare' "
        "or 'test'."
    ]


def test_name_must_match_the_file_name(tmp_path: Path) -> None:
    files = {
        **RICH,
        "agents/plain_agent.json": {**RICH["agents/plain_agent.json"], "name": "other"},
    }
    assert import_fails(write_tree(tmp_path, files)) == [
        "agents/plain_agent.json: name: The name 'other' does not match the file name; "
        "rename the file to other.json or change the name."
    ]


def test_spec_rule_errors_are_reported_per_file(tmp_path: Path) -> None:
    files = {
        "agents/a.json": {"name": "a", "type": "dual_ai", "sideA": {"prompt": "p"}},
        "agents/b.json": {"name": "b", "exposeAsTool": True, "sideA": {"prompt": ""}},
        "agents/c.json": {
            "name": "c",
            "sideA": {"prompt": "p", "maxSteps": 0},
            "icon": "javascript:x",
        },
    }
    lines = import_fails(write_tree(tmp_path, files))
    assert "agents/a.json: sideB: A dual_ai agent needs a side B with a prompt." in lines
    assert "agents/b.json: sideA.prompt: Side A needs a prompt." in lines
    assert any(line.startswith("agents/b.json: toolDescription: ") for line in lines)
    assert "agents/c.json: sideA.maxSteps: Max steps must be a positive whole number." in lines
    assert any(line.startswith("agents/c.json: icon: ") for line in lines)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"agents/notes.txt": "hello"}, "agents/notes.txt: not a definition file"),
        ({"agents/a.json": "[1, 2]"}, "agents/a.json: A definition must be a JSON object."),
        ({"agents/a.json": '"just text"'}, "agents/a.json: A definition must be a JSON object."),
        (
            {"agents/a.json": ""},
            "agents/a.json: invalid JSON at line 1, column 1: Expecting value.",
        ),
        ({"agents/a.json": '{"name": "a",}'}, "agents/a.json: invalid JSON at line 1, column 14"),
        ({"agent/a.json": "{}"}, "agent/: unknown folder"),
        ({"stray.json": "{}"}, "stray.json: unexpected file at the top level"),
        ({"models/nested/m.json": "{}"}, "models/nested/: folders inside models/ are not read"),
        ({"prompts/p.json": {"name": "p"}}, "prompts/p.json: model: Model is required."),
    ],
)
def test_malformed_directories_are_reported(
    tmp_path: Path, files: dict[str, Any], expected: str
) -> None:
    lines = import_fails(write_tree(tmp_path, files))
    assert any(line.startswith(expected) for line in lines), lines


def test_non_utf8_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.json").write_bytes(b'{"name": "\xff"}')
    assert import_fails(tmp_path) == ["models/m.json: the file is not UTF-8 text."]


def test_missing_path_and_file_path_are_reported(tmp_path: Path) -> None:
    assert import_fails(tmp_path / "nope") == [
        f"{tmp_path / 'nope'}: the directory does not exist."
    ]
    (tmp_path / "file.json").write_text("{}")
    assert import_fails(tmp_path / "file.json") == [f"{tmp_path / 'file.json'}: not a directory."]


def test_missing_folders_and_hidden_files_and_code_folders_are_fine(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path,
        {
            "models/m.json": {"name": "m", "provider": "test", "model": "x"},
            "models/.gitkeep": "",
            ".git/config": "x",
            "README.md": "Our agents.",
            "tools/lookup_order.py": "print('code, not a definition')",
        },
    )
    stdout, _ = run("import_definitions", str(src))
    assert "1 created, 0 updated" in stdout
    assert LanguageModel.objects.get().name == "m"


def test_an_empty_directory_imports_nothing(tmp_path: Path) -> None:
    stdout, _ = run("import_definitions", str(tmp_path))
    assert "Imported 0 definitions" in stdout


def test_cli_exits_non_zero_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tree(tmp_path, {"agents/a.json": {"name": "a", "sideA": {"prompt": "nope"}}})
    # run_from_argv closes the connections at the end, which would end the test's transaction.
    monkeypatch.setattr("django.core.management.base.connections.close_all", lambda: None)
    with pytest.raises(SystemExit) as exc:
        ImportCommand().run_from_argv(["manage.py", "import_definitions", str(tmp_path)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "agents/a.json: sideA.prompt: Prompt 'nope' does not exist." in err
    assert "CommandError: Nothing was imported: 1 error." in err
    assert "Traceback" not in err


def test_values_too_long_for_the_database_are_reported_by_field(tmp_path: Path) -> None:
    side = {**RICH["agents/plain_agent.json"]["sideA"], "label": "x" * 150}
    files = {**RICH, "agents/plain_agent.json": {**RICH["agents/plain_agent.json"], "sideA": side}}
    assert import_fails(write_tree(tmp_path, files)) == [
        "agents/plain_agent.json: sideA.label: At most 100 characters (this one has 150)."
    ]
    assert not LanguageModel.objects.exists()


def test_unknown_code_names_are_reported_when_code_is_loaded(tmp_path: Path) -> None:
    side = {**RICH["agents/plain_agent.json"]["sideA"], "endSessionTool": "no_such_tool"}
    files = {**RICH, "agents/plain_agent.json": {**RICH["agents/plain_agent.json"], "sideA": side}}
    assert import_fails(write_tree(tmp_path, files)) == [
        "agents/plain_agent.json: sideA.endSessionTool: "
        "'no_such_tool' is not a known tool, prompt or agent."
    ]


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    text = json.dumps({"name": "m", "provider": "test", "model": "x"})
    (tmp_path / "models" / "m.json").write_bytes(b"\xef\xbb\xbf" + text.encode())
    run("import_definitions", str(tmp_path))
    assert LanguageModel.objects.get().name == "m"


def test_provider_tool_not_offered_is_refused_at_save_import_command(tmp_path: Path) -> None:
    files = {
        "models/gpt.json": {"name": "gpt", "provider": "google", "model": "gemini-2.5-pro"},
        "prompts/searcher.json": {
            "name": "searcher",
            "model": "gpt",
            "prompt": "Search.",
            "tools": ["provider:web_search"],
        },
    }
    assert import_fails(write_tree(tmp_path, files)) == [
        "prompts/searcher.json: tools.0: 'provider:web_search' is not offered by provider "
        "'google' for model 'gpt'. Provider tools it offers: provider:google_search, "
        "provider:code_execution. Remove it or choose another model."
    ]
    assert not LanguageModel.objects.exists() and not Prompt.objects.exists()


def test_spec_response_schema_round_trips_through_files(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    files = {
        "models/gpt.json": {"name": "gpt", "provider": "openai", "model": "gpt-4o"},
        "prompts/city.json": {
            "name": "city",
            "model": "gpt",
            "prompt": "Name a city.",
            "responseSchema": schema,
        },
    }
    run("import_definitions", str(write_tree(tmp_path / "in", files)))
    run("export_definitions", str(tmp_path / "out"))
    exported = json.loads((tmp_path / "out" / "prompts" / "city.json").read_text())
    assert exported["responseSchema"] == schema
