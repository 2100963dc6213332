"""Structured output in the engine (the prompt's ``responseSchema``), with the scripted model.

Rules: the schema goes with every request of the prompt; a final answer is
checked against it; a wrong answer is asked for once more with what is wrong
appended as a user note; a second wrong answer fails the message with a clear
reason (and the session ends with a step error). Also: a ``provider:`` tool that
reached the engine (stored before saving refused it) ends the session visibly
instead of being dropped. Collected again over ``DjangoStore`` in
tests/agents_app/bridge/engine_on_django.
"""

from __future__ import annotations

from typing import Any

from runtime.step.structured import SCHEMA_MISMATCH
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
GOOD = '{"city": "London", "population": 9002488}'


@define_tool("Look the city up.")
async def lookup(state: Any) -> str:
    return "London: 9002488 people"


async def _llm_logs(world: World, thread_id: str) -> list:
    return await world.store.list_logs(thread_id, LogQuery(limit=None, kind="llm"))


async def test_spec_structured_answer_matching_the_schema_is_stored(world: World) -> None:
    provider = world.script("m", [{"content": GOOD}])
    world.define(prompt(response_schema=SCHEMA), agent())

    thread, result = await world.chat("Tell me about London")

    assert result.stop_reason == "stop_on_response"
    assert provider.requests[0].response_schema == SCHEMA
    final = (await world.messages(thread.id))[-1]
    assert final.status == "completed" and final.content == GOOD
    assert len(provider.requests) == 1


async def test_spec_structured_answer_wrong_once_is_retried_with_the_error_appended(
    world: World,
) -> None:
    provider = world.script(
        "m", [{"content": '{"city": "London", "population": "many"}'}, {"content": GOOD}]
    )
    world.define(prompt(response_schema=SCHEMA), agent())

    thread, result = await world.chat("Tell me about London")

    assert result.stop_reason == "stop_on_response"
    assert len(provider.requests) == 2
    retry = provider.requests[1]
    assert retry.response_schema == SCHEMA
    assert retry.messages[-2] == {
        "role": "assistant",
        "content": '{"city": "London", "population": "many"}',
    }
    note = retry.messages[-1]
    assert note["role"] == "user"
    assert "population" in note["content"] and "not of type 'integer'" in note["content"]
    rows = await world.messages(thread.id)
    assistant = [m for m in rows if m.role == "assistant"]
    # One message for the step: the note and the wrong answer are not stored as messages.
    assert len(assistant) == 1 and assistant[0].content == GOOD
    assert assistant[0].status == "completed"
    logs = await _llm_logs(world, thread.id)
    assert len(logs) == 2 and all(log.is_complete for log in logs)
    assert logs[1].retry_of_id == logs[0].id and assistant[0].log_id == logs[1].id


async def test_spec_structured_answer_wrong_twice_fails_the_message_with_a_clear_reason(
    world: World,
) -> None:
    world.script("m", [{"content": "London is big."}, {"content": '{"city": "London"}'}])
    world.define(prompt(response_schema=SCHEMA), agent())

    thread, result = await world.chat("Tell me about London")

    assert result.stop_reason == "step_error"
    reply = [m for m in await world.messages(thread.id) if m.role == "assistant"][-1]
    assert reply.status == "failed"
    assert reply.content == '{"city": "London"}'  # the wrong answer stays visible
    error = reply.metadata["error"]
    assert error["code"] == SCHEMA_MISMATCH
    assert "'population' is a required property" in error["message"]
    assert "after one retry" in error["message"]
    logs = await _llm_logs(world, thread.id)
    assert len(logs) == 2 and all(log.is_complete for log in logs)


async def test_spec_structured_answer_that_is_not_json_is_named_as_such(world: World) -> None:
    provider = world.script("m", [{"content": "London is big."}, {"content": GOOD}])
    world.define(prompt(response_schema=SCHEMA), agent())

    await world.chat("Tell me about London")

    assert "not valid JSON" in provider.requests[1].messages[-1]["content"]


async def test_spec_tool_calls_are_not_checked_against_the_response_schema(
    world: World,
) -> None:
    world.script("m", [{"toolCalls": [{"name": "lookup", "arguments": {}}]}, {"content": GOOD}])
    world.register(lookup)
    world.define(prompt(response_schema=SCHEMA, tools=["lookup"]), agent())

    thread, result = await world.chat("Tell me about London")

    assert result.stop_reason == "stop_on_response"
    rows = await world.messages(thread.id)
    assert [m.status for m in rows if m.role == "assistant"] == ["completed", "completed"]
    assert rows[-1].content == GOOD and len(world.requests()) == 2


async def test_provider_tool_not_offered_is_refused_at_run_time_not_dropped(
    world: World,
) -> None:
    world.script("m", [{"content": "I searched the web."}])
    world.define(prompt(tools=["provider:web_search"]), agent())

    thread, result = await world.chat("Search, please")

    assert result.stop_reason == "step_error"
    assert "provider:web_search" in (result.detail or "")
    assert not world.requests()  # never sent without the tool it was told it has
