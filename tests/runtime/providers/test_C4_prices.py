"""Row C4 (spec 0.2.0): a model without prices is never a silent $0.

Its cost comes from what the vendor reports (OpenRouter's ``usage.cost``, in
``test_engine_wiring.py``), else the kept table (``runtime/providers/price_table.json``,
long-context tiers included), else the log says the cost is unknown. Observed on the stored
log rows after a session through the engine and a real socket.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from runtime.core.spec import ModelDefinition
from runtime.providers import price_table
from runtime.providers.pricing import thread_cost
from runtime.providers.registry import install
from runtime.store.protocol import LogQuery, LogRecord
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY
from .replay import Reply


async def _one_turn(
    world: World, replay, client, model: ModelDefinition, reply: Reply
) -> LogRecord:
    replay.queue(reply)
    keys = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GROQ_API_KEY"}
    install(world.providers, client, environ={k: PLANTED_KEY for k in keys})
    world.define(model, prompt(), agent())
    thread, result = await world.chat("hi")
    assert result.stop_reason == "stop_on_response"
    [log] = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    return log


def _text_reply() -> Reply:
    return recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1].reply()


def _anthropic_reply(input_tokens: int, output_tokens: int) -> Reply:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply.sse(body.encode(), 61)


async def test_C4_a_model_without_prices_costs_the_kept_table_price(
    world: World, replay, client
) -> None:
    model = ModelDefinition(
        name="m", provider="openai", model="gpt-4o-mini", base_url=replay.url + "/v1"
    )
    log = await _one_turn(world, replay, client, model, _text_reply())

    assert log.input_tokens > 0 and log.output_tokens > 0
    uncached = log.input_tokens - log.cached_tokens
    expected = (uncached * 0.15 + log.cached_tokens * 0.075 + log.output_tokens * 0.6) / 1e6
    assert log.cost_known is True
    assert log.cost_total == pytest.approx(expected) and log.cost_total > 0


async def test_C4_a_model_with_its_own_prices_keeps_them(world: World, replay, client) -> None:
    model = ModelDefinition(
        name="m",
        provider="openai",
        model="gpt-4o-mini",
        base_url=replay.url + "/v1",
        input_price=100.0,
        output_price=200.0,
    )
    log = await _one_turn(world, replay, client, model, _text_reply())

    expected = (log.input_tokens * 100.0 + log.output_tokens * 200.0) / 1e6
    assert log.cost_total == pytest.approx(expected) and log.cost_known is True


@pytest.mark.parametrize(
    ("input_tokens", "input_price", "output_price"),
    [(200_000, 3.0, 15.0), (200_001, 6.0, 22.5)],  # at the threshold, then above it
)
async def test_C4_long_context_tier_above_the_threshold(
    world: World, replay, client, input_tokens: int, input_price: float, output_price: float
) -> None:
    model = ModelDefinition(
        name="m",
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",  # a dated id of the table's claude-sonnet-4-5
        base_url=replay.url + "/v1",
    )
    log = await _one_turn(world, replay, client, model, _anthropic_reply(input_tokens, 60))

    assert (log.input_tokens, log.output_tokens) == (input_tokens, 60)
    expected = (input_tokens * input_price + 60 * output_price) / 1e6
    assert log.cost_total == pytest.approx(expected) and log.cost_known is True


async def test_C4_no_price_anywhere_is_an_unknown_cost_not_zero(
    world: World, replay, client
) -> None:
    model = ModelDefinition(
        name="m", provider="groq", model="mystery-model-9b", base_url=replay.url + "/openai/v1"
    )
    log = await _one_turn(world, replay, client, model, _text_reply())

    assert log.output_tokens > 0  # tokens were used, and nothing says what they cost
    assert log.cost_known is False
    # Sums count what is known: the unknown row adds nothing (docs/providers.md "Cost").
    assert log.cost_total == 0.0
    assert await thread_cost(world.store, log.thread_id) == 0.0


def test_C4_the_table_is_dated_and_names_its_sources() -> None:
    table = price_table.table()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table["as_of"])
    assert table["unit"] == "USD per million tokens"
    for vendor, section in table["vendors"].items():
        assert section["source"].startswith("https://"), vendor
        for model_id, entry in section["models"].items():
            assert entry["input_price"] >= 0 and entry["output_price"] >= 0, model_id
            longs = {k for k in entry if k.startswith("long_") and k != "long_context_threshold"}
            assert bool(longs) == ("long_context_threshold" in entry), model_id
    assert price_table.lookup("openai", "gpt-4o-mini-2024-07-18") == price_table.lookup(
        "openai", "gpt-4o-mini"
    )
    assert price_table.lookup("openai", "gpt-4o-mini-tts") is None
