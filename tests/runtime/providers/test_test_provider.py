"""The ``test`` provider: scripts replayed per thread, streaming, errors, expectations."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import ModelDefinition, ScriptedResponse
from runtime.providers import ProviderRegistry
from runtime.providers.base import Finish, ProviderError, ProviderRequest, TextDelta, ToolCallDone
from runtime.providers.test_provider import DEFAULT_TEXT, TestProvider, TestScript
from runtime.step.llm import run_attempt
from tests.runtime.conftest import World, agent, prompt


def _request(*contents: str, sequence: int | None = None, system: str = "sys") -> ProviderRequest:
    messages = [{"role": "user", "content": c} for c in contents]
    return ProviderRequest(model="x", system=system, messages=messages, sequence=sequence)


async def _events(provider: TestProvider, request: ProviderRequest) -> list[Any]:
    return [event async for event in provider.stream(request)]


async def test_without_a_script_every_request_answers_the_default_text() -> None:
    provider = TestProvider()
    for _ in range(3):
        reply = await run_attempt(provider, _request("hi"))
        assert reply.content == DEFAULT_TEXT == "Test response received."


async def test_responses_come_in_order_and_the_script_runs_out_clearly() -> None:
    provider = TestProvider(TestScript().add_text("one").add_text("two"))
    assert (await run_attempt(provider, _request("a"))).content == "one"
    assert (await run_attempt(provider, _request("b"))).content == "two"
    with pytest.raises(ProviderError) as failure:
        await run_attempt(provider, _request("c", "the last message"))
    assert failure.value.code == "invalid_request"
    assert str(failure.value).startswith("TestProvider: Script exhausted after 2 responses.")
    assert 'Last message role: "user", content: "the last message..."' in str(failure.value)


async def test_sequence_selects_the_response() -> None:
    provider = TestProvider(TestScript().add_text("zero").add_text("one"))
    assert (await run_attempt(provider, _request(sequence=1))).content == "one"
    assert (await run_attempt(provider, _request(sequence=0))).content == "zero"


async def test_streaming_simulation_chunks_text() -> None:
    provider = TestProvider(TestScript().add_text("abcdefg").with_streaming(chunk_size=3))
    events = await _events(provider, _request("hi"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["abc", "def", "g"]
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"


async def test_tool_calls_stream_with_json_arguments() -> None:
    provider = TestProvider(TestScript().add_tool_call("lookup", {"id": 7}, id="c-1"))
    events = await _events(provider, _request("hi"))
    done = [e for e in events if isinstance(e, ToolCallDone)]
    assert (done[0].id, done[0].name, done[0].arguments) == ("c-1", "lookup", '{"id": 7}')
    assert events[-1].reason == "tool_calls"


async def test_default_tool_call_ids_are_stable_per_thread_and_position() -> None:
    provider = TestProvider(TestScript().add_tool_call("lookup"))
    request = _request("hi", sequence=0)
    request.metadata = {"thread_id": "t-1"}
    first = [e for e in await _events(provider, request) if isinstance(e, ToolCallDone)][0].id
    again = [e for e in await _events(provider, request) if isinstance(e, ToolCallDone)][0].id
    request.metadata = {"thread_id": "t-2"}
    other = [e for e in await _events(provider, request) if isinstance(e, ToolCallDone)][0].id
    assert first == again != other and first.startswith("call_")


async def test_scripted_error_is_a_provider_error_with_retryable_flag() -> None:
    provider = TestProvider(
        TestScript()
        .add_error("slow down", "rate_limit", 429)
        .add_error("bad", "invalid_request", 400)
    )
    with pytest.raises(ProviderError) as first:
        await run_attempt(provider, _request("a"))
    assert (first.value.message, first.value.code, first.value.status, first.value.retryable) == (
        "slow down",
        "rate_limit",
        429,
        True,
    )
    with pytest.raises(ProviderError) as second:
        await run_attempt(provider, _request("b"))
    assert second.value.retryable is False


@pytest.mark.parametrize(
    ("expect", "ok"),
    [
        ({"containsMessage": "refund"}, True),
        ({"containsMessage": "nothing like it"}, False),
        ({"messageCount": 1}, True),
        ({"messageCount": 3}, False),
        ({"systemPromptContains": "sys"}, True),
        ({"systemPromptContains": "other"}, False),
    ],
)
async def test_expect_input_violations_raise_invalid_request(
    expect: dict[str, Any], ok: bool
) -> None:
    provider = TestProvider([{"content": "fine", "expectInput": expect}])
    if ok:
        assert (await run_attempt(provider, _request("I want a refund"))).content == "fine"
    else:
        with pytest.raises(ProviderError, match="input expectation failed") as failure:
            await run_attempt(provider, _request("I want a refund"))
        assert failure.value.code == "invalid_request"


async def test_expect_tool_result() -> None:
    provider = TestProvider(
        [
            {
                "content": "ok",
                "expectInput": {
                    "containsToolResult": {"toolName": "lookup", "resultContains": "shipped"}
                },
            }
        ]
    )
    request = _request("hi")
    request.messages.append(
        {"role": "tool", "name": "lookup", "tool_call_id": "c", "content": "order shipped"}
    )
    assert (await run_attempt(provider, request)).content == "ok"


async def test_usage_is_scripted_or_estimated() -> None:
    provider = TestProvider(
        [{"content": "12345678", "usage": {"promptTokens": 50}}, {"content": "1234"}]
    )
    first = await run_attempt(provider, _request("abcd"))
    assert (first.usage.input_tokens, first.usage.output_tokens) == (50, 2)
    second = await run_attempt(provider, _request("abcd"))
    assert (second.usage.input_tokens, second.usage.output_tokens) == (1 + 1, 1)


async def test_delay_ms_is_honoured_without_timing_assertions() -> None:
    provider = TestProvider([ScriptedResponse(content="late", delay_ms=1)])
    assert (await run_attempt(provider, _request("x"))).content == "late"


async def test_requests_are_recorded() -> None:
    provider = TestProvider(TestScript().add_text("x"))
    await run_attempt(provider, _request("hello"))
    assert provider.requests[0].messages == [{"role": "user", "content": "hello"}]


def test_registry_builds_test_providers_from_the_model_script() -> None:
    model = TestScript().add_text("from the definition").model("scripted_model")
    provider = ProviderRegistry().for_model(model)
    assert isinstance(provider, TestProvider) and provider.script is not None
    assert provider.script[0].content == "from the definition"


def test_unknown_provider_is_a_clear_error() -> None:
    model = ModelDefinition(name="gpt", provider="openai", model="gpt-4o")
    with pytest.raises(ProviderError, match="No provider adapter is installed for 'openai'"):
        ProviderRegistry().for_model(model)  # adapters are installed explicitly, not by default


async def test_script_on_the_model_definition_replays_per_thread(world: World) -> None:
    """Every new thread starts from the beginning of the model's script."""
    world.define(TestScript().add_text("first").add_text("second").model("m"), prompt(), agent())
    one, r1 = await world.chat("hi")
    two, r2 = await world.chat("hi")
    r3 = await world.run(one.id, "again")
    assert (r1.final_text, r2.final_text, r3.final_text) == ("first", "first", "second")


async def test_exhausted_script_ends_the_session_with_a_step_error(world: World) -> None:
    world.define(TestScript().add_text("only one").model("m"), prompt(), agent())
    thread, _ = await world.chat("hi")
    result = await world.run(thread.id, "more")
    assert result.stop_reason == "step_error" and "Script exhausted after 1 responses" in (
        result.detail or ""
    )
