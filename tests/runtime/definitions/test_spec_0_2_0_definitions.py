"""Issue #54: definitions written for spec 0.2.0 (the reference's current one) load and run
beside 0.1.0 ones, into one internal model. Rows of shared/reference/spec-0.2.0-surface.md:
A1 side backings, A2 a person on side A, A10 maxSessionTurns as exchanges, B1 prompt
variables, C1 the 0.2.0 capability names, and the conversion between the generations.

These run on the engine over the memory store, and again over ``DjangoStore``
(``tests/agents_app/bridge/engine_on_django``), where the definitions go through the rows.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import (
    AgentDefinition,
    ModelCapabilities,
    ModelDefinition,
    PromptDefinition,
    PromptVariable,
    SideConfig,
)
from runtime.definitions.generations import NotExpressible, convert
from runtime.definitions.validation import (
    Catalog,
    parse_and_validate,
    validate_agent,
    validate_prompt,
)
from runtime.engine import NewMessage
from runtime.providers.test_provider import TestScript
from tests.runtime.conftest import World, agent, prompt, side
from tests.runtime.step.test_spec_images import attach, png, texts_sent


def _errors(kind: str, data: dict[str, Any]) -> dict[str, str]:
    _, errs = parse_and_validate(kind, data)
    return {e.path: e.message for e in errs}


def _person_first(**options: Any) -> AgentDefinition:
    """0.2.0: a person on side A, the AI (prompt ``main``) on side B."""
    return AgentDefinition(
        name="agent", side_a=SideConfig(human=True), side_b=SideConfig(prompt="main"), **options
    )


def _texts(*replies: str) -> TestScript:
    script = TestScript()
    for reply in replies:
        script.add_text(reply)
    return script


# --- A1: side backings -----------------------------------------------------------------------


def test_A1_type_is_mapped_to_side_backings() -> None:
    ai_human, _ = parse_and_validate("agents", {"name": "a", "sideA": {"prompt": "p"}})
    person_b, _ = parse_and_validate(
        "agents", {"name": "a", "sideA": {"prompt": "p"}, "sideB": {"human": True}}
    )
    assert isinstance(ai_human, AgentDefinition) and isinstance(person_b, AgentDefinition)
    assert (ai_human.spec, person_b.spec) == ("0.1.0", "0.2.0")
    for agent_ in (ai_human, person_b):  # one internal model: the same sides and loop
        assert (agent_.type, agent_.human_side(), list(agent_.sides())) == ("ai_human", "b", ["a"])
    dual, _ = parse_and_validate(
        "agents",
        {"name": "a", "type": "dual_ai", "sideA": {"prompt": "p"}, "sideB": {"prompt": "q"}},
    )
    two_prompts, _ = parse_and_validate(
        "agents", {"name": "a", "sideA": {"prompt": "p"}, "sideB": {"prompt": "q"}}
    )
    assert isinstance(dual, AgentDefinition) and isinstance(two_prompts, AgentDefinition)
    for agent_ in (dual, two_prompts):
        assert (agent_.type, agent_.human_side(), list(agent_.sides())) == (
            "dual_ai",
            None,
            ["a", "b"],
        )
    # Each is written back in its own generation.
    assert "type" not in two_prompts.dump() and dual.dump()["type"] == "dual_ai"
    assert person_b.dump()["sideB"] == {"human": True}


def test_A1_a_definition_with_type_and_0_2_0_keys_is_refused_with_a_sentence() -> None:
    found = _errors(
        "agents",
        {
            "name": "a",
            "type": "ai_human",
            "sideA": {"prompt": "p"},
            "sideB": {"human": True},
            "primary": False,
        },
    )
    assert list(found) == ["type"]
    assert found["type"].startswith(
        "type is spec 0.1.0's way to say who is on each side, and primary, sideB.human belong "
        "to spec 0.2.0: write the agent in one of them"
    )


def test_A1_both_sides_human_is_refused() -> None:
    both = {"name": "a", "sideA": {"human": True}, "sideB": {"human": True}}
    assert _errors("agents", both) == {
        "sideB": "Both sides are people: back at least one side with a prompt (the AI)."
    }


def test_A1_side_b_is_required_in_0_2_0_and_may_be_absent_in_0_1_0() -> None:
    assert _errors("agents", {"name": "a", "sideA": {"prompt": "p"}}) == {}
    assert _errors("agents", {"name": "a", "sideA": {"prompt": "p"}, "primary": True}) == {
        "sideB": 'Side B is required in spec 0.2.0: {"human": true} for a person, or '
        '{"prompt": "…"} for a second AI.'
    }


def test_A1_a_side_backed_twice_or_a_persons_side_with_settings_is_refused() -> None:
    found = _errors(
        "agents",
        {
            "name": "a",
            "sideA": {"prompt": "p", "human": True},
            "sideB": {"human": True, "label": "Customer", "maxSteps": 3},
        },
    )
    assert found["sideA"] == (
        "Side A is backed by exactly one of prompt, human: true or handler; it names prompt "
        "and human: true."
    )
    assert found["sideB.maxSteps"] == (
        "maxSteps does nothing on a person's side (a person takes no model steps); remove it."
    )
    coded = {"name": "a", "sideA": {"prompt": "p"}, "sideB": {"handler": "h", "maxSteps": 3}}
    assert _errors("agents", coded) == {
        "sideB.maxSteps": "maxSteps does nothing on a handler's side (code takes no model "
        "steps); remove it."
    }


# --- A2: a person on side A ------------------------------------------------------------------


async def test_A2_a_person_on_side_a_writes_first_and_the_ai_answers_as_side_b(
    world: World,
) -> None:
    world.define(prompt(), _person_first())
    world.script("m", _texts("Hello, how can I help?", "Sure: it ships Monday."))
    thread = await world.thread()

    # The person is side A: their messages are stored as side A's (role "assistant").
    first = await world.engine.run_session(
        thread.id, message=NewMessage("Hi, I am looking for my order.", role="assistant")
    )
    second = await world.engine.run_session(
        thread.id, message=NewMessage("When does it ship?", role="assistant")
    )

    # After each turn of the AI the session ends: the flow waits for the person.
    assert (first.stop_reason, second.stop_reason) == ("stop_on_response", "stop_on_response")
    assert [o.side for o in first.turn_outcomes + second.turn_outcomes] == ["b", "b"]
    # The model (side B) sees the person as the user and its own replies as the assistant.
    [_, request] = world.requests()
    assert [(m["role"], m["content"]) for m in request.messages] == [
        ("user", "Hi, I am looking for my order."),
        ("assistant", "Hello, how can I help?"),
        ("user", "When does it ship?"),
    ]
    stored = [(m.role, m.side, m.content) for m in await world.messages(thread.id)]
    assert stored == [
        ("assistant", "a", "Hi, I am looking for my order."),
        ("user", "b", "Hello, how can I help?"),
        ("assistant", "a", "When does it ship?"),
        ("user", "b", "Sure: it ships Monday."),
    ]


async def test_A2_a_message_for_the_persons_side_parks_as_awaiting_human(world: World) -> None:
    world.define(prompt(), _person_first())
    world.script("m", _texts("never sent"))
    thread = await world.thread()

    # A user message is side B's (the AI's) own: the person on side A acts next.
    result = await world.engine.run_session(thread.id, message=NewMessage("Hello"))

    assert (result.stop_reason, result.turns) == ("awaiting_human", 0)
    assert world.requests() == []
    assert [m.content for m in await world.messages(thread.id)] == ["Hello"]


# --- A10: maxSessionTurns as exchanges ---------------------------------------------------------


def _debate(world: World, spec: str, cap: int) -> None:
    shape: dict[str, Any] = {"type": "dual_ai"} if spec == "0.1.0" else {}
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            max_session_turns=cap,
            side_a=side("pro"),
            side_b=side("con"),
            **shape,
        ),
    )
    world.script("ma", _texts(*(f"A{i}" for i in range(6))))
    world.script("mb", _texts(*(f"B{i}" for i in range(6))))


@pytest.mark.parametrize(
    ("spec", "cap", "said"), [("0.1.0", 4, 4), ("0.2.0", 2, 4), ("0.2.0", 3, 6)]
)
async def test_A10_max_session_turns_counts_turns_in_0_1_0_and_exchanges_in_0_2_0(
    world: World, spec: str, cap: int, said: int
) -> None:
    _debate(world, spec, cap)
    thread, result = await world.chat("Is tea better than coffee?")
    assert result.stop_reason == "max_session_turns"
    messages = [m.content for m in await world.messages(thread.id)]
    assert len(messages) == 1 + said and messages[1:3] == ["A0", "B0"]


async def test_A10_max_session_turns_counts_a_persons_messages_as_their_turns(
    world: World,
) -> None:
    person_b = AgentDefinition(
        name="agent", max_session_turns=1, side_a=side(), side_b=SideConfig(human=True)
    )
    world.define(prompt(), person_b)
    world.script("m", _texts("one", "two"))
    thread = await world.thread()

    answered = await world.run(thread.id, "first")  # exchanges: A 0, B 1 → min 0
    capped = await world.run(thread.id, "second")  # A 1, B 2 → min 1: the cap
    again = await world.run(thread.id, "third")  # the count started again

    assert [r.stop_reason for r in (answered, capped, again)] == [
        "stop_on_response",
        "max_session_turns",
        "stop_on_response",
    ]
    assert [m.content for m in await world.messages(thread.id)] == [
        "first",
        "one",
        "second",
        "This conversation reached its limit of 1 exchanges (maxSessionTurns); send your "
        "message again to go on.",
        "third",
        "two",
    ]


def test_A10_0_1_0_refuses_max_session_turns_on_ai_human_and_0_2_0_accepts_it() -> None:
    zero_one = {"name": "a", "type": "ai_human", "sideA": {"prompt": "p"}, "maxSessionTurns": 3}
    assert list(_errors("agents", zero_one)) == ["maxSessionTurns"]
    zero_two = {
        "name": "a",
        "sideA": {"prompt": "p"},
        "sideB": {"human": True},
        "maxSessionTurns": 3,
    }
    assert _errors("agents", zero_two) == {}


# --- B1: prompt variables ------------------------------------------------------------------------


async def test_B1_a_required_prompt_variable_left_unset_stops_before_any_request(
    world: World,
) -> None:
    variables = [PromptVariable(name="SHOP_ID", type="text", description="Which shop")]
    world.define(prompt(variables=variables), agent())
    world.script("m", _texts("never sent"))

    thread, result = await world.chat("hi")

    assert result.stop_reason == "step_error"
    assert world.requests() == []
    said = (await world.messages(thread.id))[-1].content
    assert said == 'Missing required env value "SHOP_ID" (needed by prompt "main")'


# --- C1: capabilities in 0.2.0's names -----------------------------------------------------------


def test_C1_both_names_of_a_capability_are_one_capability() -> None:
    caps = ModelCapabilities.model_validate({"supportsImages": False, "functionCalling": True})
    assert (caps.images, caps.tool_calls, caps.json_mode) == (False, True, None)
    found = _errors(
        "models",
        {
            "name": "m",
            "provider": "test",
            "model": "s",
            "capabilities": {"vision": True, "supportsImages": False},
        },
    )
    assert found == {
        "capabilities": "vision is the 0.1.0 name of supportsImages; give one of them, not both."
    }


async def test_C1_supports_images_false_replaces_images_with_the_placeholder(world: World) -> None:
    world.script("m", [{"content": "ok", "expectInput": {"imageCount": 0}}])
    world.define(
        ModelDefinition(
            name="m",
            provider="test",
            model="scripted",
            capabilities=ModelCapabilities(supports_images=False),
        ),
        prompt(),
        agent(),
    )
    world.providers.override("m", world.scripted["m"])
    thread = await world.thread()
    ref = await attach(world, thread.id, "sq.png", png(), "image/png")

    await world.engine.run_session(thread.id, message=NewMessage("What is it?", attachments=[ref]))

    assert "[Image omitted: sq.png; this model does not support vision]" in texts_sent(
        world.requests()[0]
    )


async def test_C1_supports_tool_calls_false_offers_no_tools(world: World) -> None:
    from tests.runtime.step.test_context import search

    world.register(search)
    world.define(prompt(tools=["search"]), agent())
    world.script("m", _texts("ok"))
    world.define(
        ModelDefinition(
            name="m",
            provider="test",
            model="x",
            capabilities=ModelCapabilities(supports_tool_calls=False),
        )
    )
    await world.chat("x")
    assert world.requests()[0].tools == []


async def test_C1_max_context_tokens_hands_an_oversized_request_to_the_fallback(
    world: World,
) -> None:
    small = ModelDefinition(
        name="small",
        provider="test",
        model="s",
        fallbacks=["m"],
        capabilities=ModelCapabilities(max_context_tokens=20),
    )
    world.script("small", _texts("never sent"))
    world.script("m", _texts("The big model answers."))
    world.define(small, prompt(model="small"), agent())

    _, result = await world.chat("word " * 100)

    assert result.stop_reason == "stop_on_response"
    assert world.requests("small") == [] and len(world.requests("m")) == 1


# --- the conversion between the generations ------------------------------------------------------


def test_A10_0_1_0_turns_convert_to_half_as_many_exchanges_and_odd_turns_are_refused() -> None:
    dual = {
        "name": "d",
        "type": "dual_ai",
        "maxSessionTurns": 6,
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "q"},
    }
    out, changes = convert("agents", dual, "0.2.0")
    assert out == {
        "name": "d",
        "maxSessionTurns": 3,
        "sideA": {"prompt": "p"},
        "sideB": {"prompt": "q"},
    }
    assert changes == [
        "type dual_ai → two prompt-backed sides (type removed)",
        "maxSessionTurns 6 (turns) → 3 (exchanges, a turn of each side)",
    ]
    assert convert("agents", out, "0.1.0")[0] == dual
    with pytest.raises(NotExpressible) as odd:
        convert("agents", {**dual, "maxSessionTurns": 5}, "0.2.0")
    assert odd.value.path == "maxSessionTurns"


def test_A1_a_person_on_side_a_cannot_be_written_in_0_1_0() -> None:
    definition = _person_first()
    assert validate_agent(definition) == []
    with pytest.raises(NotExpressible) as exc:
        convert("agents", definition.dump(), "0.1.0")
    assert exc.value.path == "sideA.human"
    assert exc.value.message.startswith("A person on side A cannot be written in 0.1.0")


def test_A1_an_agent_with_a_person_on_side_a_is_never_called_as_a_tool() -> None:
    exposed = _person_first(expose_as_tool=True, tool_description="Asks.")
    assert [(e.path, e.message[:47]) for e in validate_agent(exposed)] == [
        ("exposeAsTool", "An agent with a person on side A cannot be call")
    ]
    catalog = Catalog(models={"m"}, prompts={"caller"}, agents={"kiosk"}, strict_code_names=False)
    catalog.agent_shapes["kiosk"] = ("human_a", False)
    caller = PromptDefinition(name="caller", model="m", tools=["kiosk"])
    [error] = validate_prompt(caller, catalog)
    assert error.path == "tools.0" and error.message.startswith(
        "'kiosk' has a person on side A, who speaks first in its threads"
    )
