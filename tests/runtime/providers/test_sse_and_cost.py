"""The SSE parser on awkward byte boundaries, and the cost rules."""

from __future__ import annotations

import pytest

from runtime.core.spec import ModelDefinition
from runtime.providers.base import Usage
from runtime.providers.cost import Prices, compute_cost, model_cost
from runtime.providers.pricing import cost_of
from runtime.providers.sse import SSEDecoder

from . import recordings


def parse(chunks: list[bytes]) -> list[tuple[str, str]]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.close()
    return [(e.event, e.data) for e in events]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("gemini/stream_function_call_thought_signature.sse", 2),  # CRLF separated
        ("openrouter/chat_stream_reasoning.sse", 15),  # LF, with comment keep-alives
        ("anthropic/messages_stream_parallel_tool_use.sse", 21),  # named events
    ],
)
def test_any_chunking_gives_the_same_events(size, name, count):
    body = recordings.raw(name)
    whole = parse([body])
    assert parse([body[i : i + size] for i in range(0, len(body), size)]) == whole
    assert len(whole) == count


def test_comments_named_events_and_multiline_data():
    body = b': keep-alive\n\nevent: message_start\ndata: {"a":\ndata: 1}\n\nevent: ping\r\ndata: {}\r\r'
    assert parse([body]) == [("message_start", '{"a":\n1}'), ("ping", "{}")]


@pytest.mark.parametrize(
    "tail", [b'data: {"cut": "mid-ev', b'data: {"no": "blank line"}\n', b'data: {"x": 1}\r\n']
)
def test_an_unterminated_last_event_is_dropped(tail):
    body = b'data: {"complete": true}\n\n' + tail
    assert parse([body]) == parse([body[:-1], body[-1:]]) == [("message", '{"complete": true}')]


def test_utf8_split_across_chunks():
    body = 'data: {"t": "30°C — ok"}\n\n'.encode()
    cut = body.index("°".encode()) + 1
    assert parse([body[:cut], body[cut:]]) == [("message", '{"t": "30°C — ok"}')]


MODEL = ModelDefinition(
    name="m", provider="openai", model="m", input_price=2.5, output_price=10.0, cached_price=1.25
)


def test_cost_splits_cached_input_and_output():
    usage = Usage(input_tokens=4020, output_tokens=4, cached_tokens=4012, reasoning_tokens=0)
    cost = model_cost(MODEL, usage)
    assert (cost.input, cost.cached, cost.output) == (0.00002, 0.005015, 0.00004)
    assert cost.total == pytest.approx(0.005075) and not cost.reported
    engine = cost_of(MODEL, usage)  # the engine's log rows use the same rules
    assert (engine.input, engine.cached, engine.output, engine.total) == (
        cost.input,
        cost.cached,
        cost.output,
        cost.total,
    )


def test_cached_price_falls_back_to_input_price_and_rounds_to_12_places():
    cost = compute_cost(
        Usage(input_tokens=3, cached_tokens=1, output_tokens=1), Prices(input=0.1, output=0.3)
    )
    assert cost.cached == cost.input / 2 == 1e-07
    assert cost.total == round(2e-07 + 1e-07 + 3e-07, 12)


def test_a_vendor_reported_cost_is_the_total():
    cost = compute_cost(
        Usage(input_tokens=43, output_tokens=36), Prices(1, 1), reported_total=0.000669
    )
    assert cost.total == 0.000669 and cost.reported
