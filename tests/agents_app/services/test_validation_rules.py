"""Every validation rule of agents-spec §9 (and the reference checks), accepting and rejecting.

Rules that need no other definition go through ``parse_and_validate``; references go
through ``save_definitions``, which validates a batch against the database plus the batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents_app.base.code_registry import reset_registry
from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.definitions.rows import DefinitionsInvalid
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import PromptDefinition
from runtime.definitions.validation import Catalog, parse_and_validate, validate_prompt
from runtime.tools.registry import Registry, define_tool


def agent(**overrides: Any) -> dict[str, Any]:
    return {"name": "support_agent", "sideA": {"prompt": "support_prompt"}, **overrides}


def dual(**overrides: Any) -> dict[str, Any]:
    return agent(type="dual_ai", sideB={"prompt": "support_prompt"}, **overrides)


def errors(kind: str, data: Any) -> dict[str, str]:
    """Field path → message of every error of one definition checked on its own."""
    _, errs = parse_and_validate(kind, data)
    return {e.path: e.message for e in errs}


def accepted(kind: str, data: Any) -> bool:
    obj, errs = parse_and_validate(kind, data)
    return obj is not None and not errs


def save(*items: tuple[str, dict[str, Any]], strict_code_names: bool = False) -> None:
    """Parse raw definitions (kind, data) and save them together, as the import does."""
    batch = []
    for kind, data in items:
        obj, errs = parse_and_validate(kind, data)
        assert obj is not None and not errs, errs
        batch.append((f"{kind}/{data['name']}.json", obj))
    save_definitions(batch, strict_code_names=strict_code_names)  # type: ignore[arg-type]


def save_errors(*items: tuple[str, dict[str, Any]], strict: bool = False) -> dict[str, str]:
    """``label path`` → message of every error ``save_definitions`` reports for the batch."""
    with pytest.raises(DefinitionsInvalid) as exc:
        save(*items, strict_code_names=strict)
    return {
        f"{label} {e.path}": e.message for label, errs in exc.value.errors.items() for e in errs
    }


def model(name: str = "m", **overrides: Any) -> tuple[str, dict[str, Any]]:
    return "models", {"name": name, "provider": "test", "model": "scripted", **overrides}


def prompt(name: str = "support_prompt", **overrides: Any) -> tuple[str, dict[str, Any]]:
    return "prompts", {"name": name, "prompt": "Be helpful.", "model": "m", **overrides}


# --- §9.1 required fields -------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   "])
def test_spec_9_1_1_name_must_be_non_empty(name: str) -> None:
    assert errors("agents", agent(name=name)) == {"name": "Name is required."}


def test_spec_9_1_1_name_is_required() -> None:
    data = agent()
    del data["name"]
    assert errors("agents", data) == {"name": "Name is required."}


@pytest.mark.parametrize(
    "name", ["../support_agent", "..", "a/b", "/etc/passwd", ".hidden", "a\\b", "x..y", "a b"]
)
def test_spec_9_1_1_name_rejects_path_traversal(name: str) -> None:
    assert "file paths" in errors("agents", agent(name=name))["name"]


@pytest.mark.parametrize("name", ["support_agent", "research-agent", "v1.2_agent", "A9"])
def test_spec_9_1_1_name_accepts_safe_names(name: str) -> None:
    assert accepted("agents", agent(name=name))


def test_spec_9_1_1_name_is_at_most_128_characters() -> None:
    assert accepted("agents", agent(name="a" * 128))
    assert "name" in errors("agents", agent(name="a" * 129))


def test_spec_9_1_1_name_rule_applies_to_prompts_and_models_too() -> None:
    assert "name" in errors("prompts", {"name": "../p", "model": "m"})
    assert "name" in errors("models", {"name": "", "provider": "test", "model": "x"})


def test_spec_9_1_2_side_a_required() -> None:
    assert errors("agents", {"name": "support_agent"}) == {"sideA": "Side A is required."}


@pytest.mark.parametrize("value", ["", "   "])
def test_spec_9_1_3_side_a_prompt_non_empty(value: str) -> None:
    assert errors("agents", agent(sideA={"prompt": value})) == {
        "sideA.prompt": "Side A needs a prompt."
    }


def test_spec_9_1_3_side_a_prompt_required() -> None:
    assert errors("agents", agent(sideA={"label": "Support"})) == {
        "sideA.prompt": "Prompt is required."
    }


def test_spec_9_1_3_side_a_prompt_must_be_text() -> None:
    assert errors("agents", agent(sideA={"prompt": 7})) == {"sideA.prompt": "Prompt must be text."}


def test_spec_9_1_4_dual_ai_requires_side_b_and_its_prompt() -> None:
    assert "sideB" in errors("agents", agent(type="dual_ai"))
    assert errors("agents", agent(type="dual_ai", sideB={"label": "Con"})) == {
        "sideB.prompt": "Prompt is required."
    }
    assert errors("agents", agent(type="dual_ai", sideB={"prompt": " "})) == {
        "sideB.prompt": "Side B needs a prompt."
    }
    assert accepted("agents", agent(type="dual_ai", sideB={"prompt": "con"}))


def test_spec_9_1_4_ai_human_needs_no_side_b() -> None:
    assert accepted("agents", agent(type="ai_human"))


# --- §9.2 conditional -----------------------------------------------------------------


def test_spec_9_2_1_expose_as_tool_requires_tool_description() -> None:
    for missing in ({}, {"toolDescription": ""}, {"toolDescription": "  "}):
        errs = errors("agents", agent(exposeAsTool=True, **missing))
        assert list(errs) == ["toolDescription"]
        assert "tool description" in errs["toolDescription"]
    assert accepted("agents", agent(exposeAsTool=True, toolDescription="Hand off to support"))
    assert accepted("agents", agent(exposeAsTool=False))


@pytest.mark.parametrize("side", ["sideA", "sideB"])
def test_spec_9_2_2_stop_tool_requires_response_property(side: str) -> None:
    sides = {"sideA": {"prompt": "a"}, "sideB": {"prompt": "b"}}
    sides[side] = {**sides[side], "stopTool": "classify"}
    errs = errors("agents", agent(type="dual_ai", **sides))
    assert list(errs) == [f"{side}.stopToolResponseProperty"]
    sides[side]["stopToolResponseProperty"] = "intent"
    assert accepted("agents", agent(type="dual_ai", **sides))


@pytest.mark.parametrize("value", [0, -1])
def test_spec_9_2_3_max_steps_positive(value: int) -> None:
    assert errors("agents", agent(sideA={"prompt": "p", "maxSteps": value})) == {
        "sideA.maxSteps": "Max steps must be a positive whole number."
    }
    dual = agent(type="dual_ai", sideB={"prompt": "q", "maxSteps": value})
    assert list(errors("agents", dual)) == ["sideB.maxSteps"]


def test_spec_9_2_3_max_steps_accepts_positive_whole_numbers() -> None:
    assert accepted("agents", agent(sideA={"prompt": "p", "maxSteps": 1}))
    assert errors("agents", agent(sideA={"prompt": "p", "maxSteps": 2.5})) == {
        "sideA.maxSteps": "Max steps must be a whole number."
    }


@pytest.mark.parametrize("value", [0, -3])
def test_spec_9_2_4_max_session_turns_positive(value: int) -> None:
    assert errors("agents", dual(maxSessionTurns=value)) == {
        "maxSessionTurns": "Max session turns must be a positive whole number."
    }
    assert accepted("agents", dual(maxSessionTurns=1))


@pytest.mark.parametrize("value", [250, 251, 10_000])
def test_spec_max_session_turns_above_250_is_accepted_to_be_capped(value: int) -> None:
    """AgentBuilder agents API: "Hard maximum: 250 turns regardless of this setting"; the
    runtime caps (tests/runtime/test_spec_engine_rules.py), so saving does not refuse."""
    assert accepted("agents", dual(maxSessionTurns=value))


# --- §9.3 types, §3.3 and §5.1 defaults ---------------------------------------------------


@pytest.mark.parametrize("value", ["human_ai", "", "AI_HUMAN", 5, None])
def test_spec_9_3_1_type_enum(value: Any) -> None:
    assert errors("agents", agent(type=value)) == {
        "type": "Type must be one of: 'ai_human' or 'dual_ai'."
    }


def test_spec_9_3_1_type_accepts_both_types() -> None:
    assert accepted("agents", agent(type="ai_human"))
    assert accepted("agents", agent(type="dual_ai", sideB={"prompt": "q"}))


def test_spec_3_3_type_defaults_to_ai_human(db: Any) -> None:
    obj, _ = parse_and_validate("agents", agent())
    assert obj is not None and obj.type == "ai_human"  # type: ignore[attr-defined]
    save(model(), prompt(), ("agents", agent()))
    assert Agent.objects.get(name="support_agent").type == Agent.Type.AI_HUMAN


def test_spec_5_1_stop_on_response_defaults_to_true() -> None:
    obj, _ = parse_and_validate("agents", agent())
    assert obj is not None and obj.side_a.stop_on_response is True  # type: ignore[attr-defined]


# --- §8.2 icons ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "icon",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "vbscript:msgbox(1)",
        "//evil.example/icon.svg",
        "icons/relative.svg",
        '/icons/a.svg" onerror="alert(1)',
    ],
)
def test_spec_8_2_icon_rejects_javascript_urls(icon: str) -> None:
    assert "javascript:" in errors("agents", agent(icon=icon))["icon"]


@pytest.mark.parametrize(
    "icon", ["data:image/svg+xml;base64,PHN2Zz4=", "data:text/html,<script>alert(1)</script>"]
)
def test_spec_8_2_icon_rejects_data_urls(icon: str) -> None:
    assert list(errors("agents", agent(icon=icon))) == ["icon"]


@pytest.mark.parametrize(
    "icon", ["/icons/support.svg", "https://example.com/icon.svg", "http://localhost/i.png"]
)
def test_spec_8_2_icon_accepts_absolute_paths_and_http_urls(icon: str) -> None:
    assert accepted("agents", agent(icon=icon))


# --- references (checked against the database plus the batch) ------------------------------


def test_prompt_model_must_exist(db: Any) -> None:
    assert save_errors(model(), prompt(model="nope")) == {
        "prompts/support_prompt.json model": "Model 'nope' does not exist."
    }
    assert not Prompt.objects.exists()


def test_side_prompt_must_exist(db: Any) -> None:
    dual = agent(type="dual_ai", sideA={"prompt": "nope"}, sideB={"prompt": "gone"})
    assert save_errors(model(), prompt(), ("agents", dual)) == {
        "agents/support_agent.json sideA.prompt": "Prompt 'nope' does not exist.",
        "agents/support_agent.json sideB.prompt": "Prompt 'gone' does not exist.",
    }


def test_side_b_of_an_ai_human_agent_is_refused() -> None:
    # Side B of an ai_human agent was stored and never read (issue #38 item 5). Typed: a
    # side B without ``type`` is spec 0.2.0's second AI (issue #54).
    assert errors("agents", agent(type="ai_human", sideB={"prompt": "nope"})) == {
        "sideB": "Side B applies only to dual_ai agents (in an ai_human agent side B is the "
        "person); remove it, or set type to dual_ai."
    }


def test_references_may_point_into_the_same_batch_or_the_database(db: Any) -> None:
    save(model(), prompt())
    save(("agents", agent()))
    assert Agent.objects.get().side_a_prompt.name == "support_prompt"


def test_fallbacks_must_exist(db: Any) -> None:
    assert save_errors(model(fallbacks=["backup"])) == {
        "models/m.json fallbacks.0": "Fallback model 'backup' does not exist."
    }
    save(model(fallbacks=["backup"]), model("backup"))
    assert LanguageModel.objects.get(name="m").fallback_names() == ["backup"]


def test_model_cannot_be_its_own_fallback() -> None:
    assert errors("models", model(fallbacks=["m"])[1]) == {
        "fallbacks.0": "A model cannot be its own fallback."
    }


def test_fallbacks_without_cycles(db: Any) -> None:
    errs = save_errors(model("a", fallbacks=["b"]), model("b", fallbacks=["a"]))
    assert errs["models/a.json fallbacks"] == "Fallbacks form a cycle: a → b → a."
    save(model("a", fallbacks=["b"]), model("b"))
    # The cycle is also found against what the database already holds.
    assert "models/b.json fallbacks" in save_errors(model("b", fallbacks=["a"]))


def test_includes_must_exist(db: Any) -> None:
    parts = [{"type": "include", "prompt": "style"}]
    assert save_errors(model(), prompt(prompt=parts)) == {
        "prompts/support_prompt.json prompt.0.prompt": "Included prompt 'style' does not exist."
    }
    save(model(), prompt(prompt=parts), prompt("style"))
    include = Prompt.objects.get(name="support_prompt").parts.get().include
    assert include is not None and include.name == "style"


def test_includes_without_cycles(db: Any) -> None:
    include = [{"type": "include", "prompt": "b"}]
    errs = save_errors(
        model(),
        prompt("a", prompt=include),
        prompt("b", prompt=[{"type": "include", "prompt": "a"}]),
    )
    assert errs["prompts/a.json prompt"] == "Prompt includes form a cycle: a → b → a."
    assert "prompts/b.json prompt" in errs


def test_prompt_cannot_include_itself(db: Any) -> None:
    errs = save_errors(model(), prompt("a", prompt=[{"type": "include", "prompt": "a"}]))
    assert errs == {"prompts/a.json prompt": "Prompt includes form a cycle: a → a."}


def test_include_cycle_through_the_database_is_found(db: Any) -> None:
    save(model(), prompt("a", prompt=[{"type": "include", "prompt": "b"}]), prompt("b"))
    errs = save_errors(prompt("b", prompt=[{"type": "include", "prompt": "a"}]))
    assert errs == {"prompts/b.json prompt": "Prompt includes form a cycle: b → a → b."}


def test_unknown_provider_is_rejected() -> None:
    assert errors("models", model(provider="openia")[1]) == {
        "provider": "Provider must be one of: 'openai', 'openrouter', 'anthropic', 'google', "
        "'groq', 'xai', 'cerebras', 'deepinfra', 'novita', 'cloudflare' or 'test'."
    }


def test_only_test_models_have_a_script() -> None:
    data = model(provider="openai", script=[{"content": "hi"}])[1]
    assert list(errors("models", data)) == ["script"]


def test_prices_are_non_negative_and_fit_the_column() -> None:
    assert errors("models", model(inputPrice=-1)[1]) == {
        "inputPrice": "Input price must be at least 0."
    }
    assert list(errors("models", model(outputPrice=2_000_000)[1])) == ["outputPrice"]
    assert accepted("models", model(inputPrice=0.15, outputPrice=0.6, cachedPrice=0.075)[1])


@pytest.fixture
def no_code_tools() -> Iterator[None]:
    reset_registry(Registry())
    yield
    reset_registry(None)


def test_tool_names_are_checked_only_when_code_is_loaded(db: Any, no_code_tools: None) -> None:
    classifier = agent(
        sideA={
            "prompt": "support_prompt",
            "stopTool": "classify",
            "stopToolResponseProperty": "intent",
        }
    )
    items = (model(), prompt(tools=["lookup_order"]), ("agents", classifier))
    errs = save_errors(*items, strict=True)
    assert errs == {
        "prompts/support_prompt.json tools.0": "'lookup_order' is not a known tool, prompt or agent.",
        "agents/support_agent.json sideA.stopTool": "'classify' is not a known tool, prompt or agent.",
    }
    save(*items, strict_code_names=False)
    assert Agent.objects.get().side_a_stop_tool == "classify"


def test_registered_code_tools_are_known(db: Any) -> None:
    async def lookup_order(state: Any) -> str:
        return "ok"

    reset_registry(Registry(define_tool("Look up an order.", lookup_order)))
    try:
        save(model(), prompt(tools=["lookup_order"]), strict_code_names=True)
    finally:
        reset_registry(None)
    assert Prompt.objects.get().tool_entries.get().name == "lookup_order"


def test_prompts_and_agents_count_as_tools(db: Any, no_code_tools: None) -> None:
    save(
        model(),
        prompt("helper"),
        prompt(tools=["helper"]),
        strict_code_names=True,
    )
    assert list(
        Prompt.objects.get(name="support_prompt").tool_entries.values_list("name", flat=True)
    ) == ["helper"]


# --- configuration the runtime would ignore is refused (provider tools, response schema) ------


def test_provider_tool_not_offered_is_refused_at_save_runtime_validation() -> None:
    defn = PromptDefinition(name="p", model="g", tools=["provider:web_search"])
    catalog = Catalog(models={"g"}, model_providers={"g": "google"}, strict_code_names=False)
    assert [str(e) for e in validate_prompt(defn, catalog)] == [
        "tools.0: 'provider:web_search' is not offered by provider 'google' for model 'g'. "
        "Provider tools it offers: provider:google_search, provider:code_execution. Remove it "
        "or choose another model."
    ]
    offered = defn.model_copy(update={"tools": ["provider:google_search"]})
    assert validate_prompt(offered, catalog) == []
    # A model the catalog does not know (reported on its own): refused all the same.
    unknown = validate_prompt(defn.model_copy(update={"model": "x"}), catalog)
    assert "Model 'x' does not exist." in str(unknown)


def test_provider_tool_not_offered_is_refused_at_save_import(db: Any) -> None:
    found = save_errors(
        model(provider="openrouter", model="deepseek/deepseek-chat"),
        prompt(tools=["provider:web_search", {"name": "provider:code_execution"}]),
    )
    assert found == {
        "prompts/support_prompt.json tools.1": "'provider:code_execution' is not offered by "
        "provider 'openrouter' for model 'm'. Provider tools it offers: provider:web_search. "
        "Remove it or choose another model.",
    }
    assert not Prompt.objects.exists() and not LanguageModel.objects.exists()


def test_provider_tool_not_offered_is_refused_at_save_import_for_each_fallback(db: Any) -> None:
    with pytest.raises(DefinitionsInvalid) as exc:
        save(
            model("gem", provider="google", model="gemini-2.5-pro"),
            model("claude", provider="anthropic", model="claude-sonnet-4-5"),
            model(provider="openrouter", model="x", fallbacks=["claude", "gem"]),
            prompt(tools=["provider:web_search"]),
        )
    # OpenRouter and Anthropic run web_search; the Gemini fallback does not.
    messages = [e.message for e in exc.value.errors["prompts/support_prompt.json"]]
    assert len(messages) == 1
    assert "provider 'google' for model 'gem'" in messages[0]
    assert "provider:google_search" in messages[0]


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_spec_response_schema_is_imported_and_exported(db: Any) -> None:
    save(model(capabilities={"structuredOutputs": True}), prompt(responseSchema=SCHEMA))
    from agents_app.services.definitions.rows import prompt_definition

    assert prompt_definition(Prompt.objects.get()).dump()["responseSchema"] == SCHEMA


def test_spec_response_schema_refused_at_import_when_a_model_cannot_do_structured_output(
    db: Any,
) -> None:
    found = save_errors(
        model("plain", capabilities={"structuredOutputs": False}),
        model(fallbacks=["plain"]),
        prompt(responseSchema=SCHEMA),
    )
    assert found == {
        "prompts/support_prompt.json responseSchema": "Model 'plain' (provider 'test') cannot "
        "answer with structured output: its capabilities say structured outputs are not "
        "supported. Choose another model or remove the response schema."
    }


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "required": "city"}, "not a valid JSON Schema (at required)"),
        ({"type": "string"}, "must describe an object"),
    ],
)
def test_spec_invalid_response_schema_is_refused(schema: Any, expected: str) -> None:
    found = errors("prompts", prompt(responseSchema=schema)[1])
    assert list(found) == ["responseSchema"] and expected in found["responseSchema"]


def test_save_is_all_or_nothing(db: Any) -> None:
    save_errors(model(), prompt(), ("agents", agent(sideA={"prompt": "nope"})))
    assert not LanguageModel.objects.exists()
    assert not Prompt.objects.exists()


# --- messages are sentences for people ---------------------------------------------------------

MALFORMED = [
    ("agents", {"name": "a", "sideA": {"prompt": "p", "stopOnResponse": "maybe"}}),
    ("agents", {"name": "a", "sideA": "p"}),
    ("agents", {"name": "a", "sideA": {"prompt": "p"}, "tenvs": [], "tags": "x", "sidea": {}}),
    ("prompts", {"name": "p", "model": "m", "prompt": 5}),
    ("prompts", {"name": "p", "model": "m", "prompt": [{"type": "weird"}, {"type": "text"}, 3]}),
    ("prompts", {"name": "p", "model": "m", "prompt": [{"type": "include", "prompt": 5}]}),
    (
        "prompts",
        {"name": "p", "model": "m", "tools": [5, {"nam": "x"}, {"name": "t", "resumable": True}]},
    ),
    (
        "prompts",
        {
            "name": "p",
            "model": "m",
            "tools": [{"name": "t", "resumable": {"receivesMessages": "x"}}],
        },
    ),
    ("prompts", {"name": "p", "model": "m", "toolChoice": "always", "reasoning": {"effort": 3}}),
    ("prompts", {"name": "p", "model": "m", "env": {"API_KEY": 5}, "recentImageThreshold": -1}),
    (
        "models",
        {
            "name": "m",
            "provider": "test",
            "model": "x",
            "script": [{"toolCalls": [{"arguments": 5}]}],
        },
    ),
    ("models", {"name": "m", "provider": "test", "model": "x", "script": {"content": "x"}}),
    ("models", {"name": "m", "provider": "test", "model": "x", "streaming": {"chunkSize": 0}}),
    (
        "models",
        {"name": "m", "provider": "test", "model": "x", "capabilities": {"vision": "yes please"}},
    ),
    ("models", ["not", "an", "object"]),
]
JARGON = (
    "Input should",
    "Field required",
    "Extra inputs",
    "dictionary",
    "union",
    "literal[",
    "PromptTextPart",
    "ToolConfig",
    "ResumableConfig",
    "str ",
    "model_type",
    "instance of",
)


@pytest.mark.parametrize(("kind", "data"), MALFORMED)
def test_messages_are_human_sentences(kind: str, data: Any) -> None:
    _, errs = parse_and_validate(kind, data)
    assert errs
    for e in errs:
        assert not any(word in e.message for word in JARGON), e
        segments = e.path.split(".")
        assert not any(
            "[" in s or s in ("str", "bool") or s.endswith(("Config", "Part")) for s in segments
        ), e
        assert e.message[0].isupper() and e.message.endswith("."), e


def test_union_errors_point_at_the_member_that_was_meant() -> None:
    data = {
        "name": "p",
        "model": "m",
        "prompt": [{"type": "text"}, {"type": "weird"}, {"type": "include", "prompt": 5}],
        "tools": [5, {"name": "t", "resumable": True}],
    }
    assert errors("prompts", data) == {
        "prompt.0.content": "Content is required.",
        "prompt.1.type": "Type must be one of: 'text', 'include' or 'env'.",
        "prompt.2.prompt": "Prompt must be text.",
        "tools.0": "Item 1 of tools must be text or an object.",
        "tools.1.resumable": "Resumable must be an object or false.",
    }


def test_text_longer_than_its_column_is_rejected_before_saving() -> None:
    # PostgreSQL refuses over-long values (SQLite would keep them): validation says so first.
    errs = errors(
        "agents",
        agent(title="t" * 201, sideA={"prompt": "p", "label": "l" * 101}, tenvs={"K" * 129: "v"}),
    )
    assert errs == {
        "title": "At most 200 characters (this one has 201).",
        "sideA.label": "At most 100 characters (this one has 101).",
        f"tenvs.{'K' * 129}": "At most 128 characters (this one has 129).",
    }
    long_tool = {
        "name": "p",
        "model": "m",
        "tools": ["t" * 201, {"name": "x", "optional": "o" * 129}],
    }
    assert list(errors("prompts", long_tool)) == ["tools.0", "tools.1.optional"]
    assert list(errors("models", model(model="m" * 201)[1])) == ["model"]
