"""``request.sequence``: how many responses a thread already had from a model, counted from
the stored logs for a provider that replays a script by it (the ``test`` provider), and not
counted at all for the vendors' adapters, which never read it (issue #39: the count was a
statement at every session start, over all of the thread's logs)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from runtime.core.spec import ModelDefinition, ScriptedResponse
from runtime.providers.base import Finish, ProviderRequest, StreamEvent, TextDelta, Usage
from tests.runtime.conftest import World, agent, prompt


class Vendor:
    """Stands for a vendor's adapter: answers and keeps what it was sent."""

    name = "openai"

    def __init__(self, sent: list[ProviderRequest]) -> None:
        self.sent = sent

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        self.sent.append(request)
        yield TextDelta("Hello.")
        yield Finish("stop", Usage(input_tokens=3, output_tokens=1))


def _counting(world: World, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    counted: list[str] = []
    real = world.store.count_llm_responses

    async def count_llm_responses(thread_id: str, model: str) -> int:
        counted.append(model)
        return await real(thread_id, model)

    monkeypatch.setattr(world.store, "count_llm_responses", count_llm_responses)
    return counted


async def test_a_vendor_model_is_sent_no_sequence_and_its_responses_are_never_counted(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[ProviderRequest] = []
    world.providers.register("openai", lambda model: Vendor(sent))
    world.define(ModelDefinition(name="v", provider="openai", model="gpt-4o-mini"))
    world.define(prompt(model="v"), agent())
    counted = _counting(world, monkeypatch)
    thread, first = await world.chat("Hi.")
    second = await world.run(thread.id, "Again.")
    assert (first.stop_reason, second.stop_reason) == ("stop_on_response", "stop_on_response")
    assert [request.sequence for request in sent] == [None, None]
    assert counted == []


async def test_the_scripted_provider_gets_each_sessions_next_response_from_one_count(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [ScriptedResponse(content="one"), ScriptedResponse(content="two")]
    world.define(ModelDefinition(name="s", provider="test", model="scripted", script=script))
    world.define(prompt(model="s"), agent())
    counted = _counting(world, monkeypatch)
    thread, _ = await world.chat("Hi.")
    await world.run(thread.id, "Again.")
    replies = [m.content for m in await world.messages(thread.id) if m.role == "assistant"]
    assert replies == ["one", "two"]
    assert counted == ["s", "s"]  # once per session, then counted on in memory
