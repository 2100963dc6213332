"""Anthropic server tools (web search, code execution) replayed from the recordings: sent in
native form, recorded as provider tool results and citations, sent back next turn exactly
as the recorded second turns show, never run here."""

from __future__ import annotations

from typing import Any

from runtime.core.provider_tools import (
    CitationsFound,
    ProviderToolChoice,
    ProviderToolDone,
    WebSearchDone,
)
from runtime.core.spec import ReasoningConfig
from runtime.providers.anthropic.provider import AnthropicProvider

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import Collected, collect, request, user


def adapter(client: Any, replay: Any, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(client, PLANTED_KEY, replay.url + "/v1", **kw)


def _no_nulls(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded tools without the null options the recording client sent."""
    return [{k: v for k, v in t.items() if v is not None} for t in tools]


def tools_of(out: Collected) -> list[ProviderToolDone]:
    return [e for e in out.events if isinstance(e, ProviderToolDone)]


def citations_of(out: Collected) -> list[Any]:
    return [c for e in out.events if isinstance(e, CitationsFound) for c in e.citations]


def assistant(out: Collected) -> dict[str, Any]:
    """The assistant message as history sends it back (text + provider_data)."""
    return {"role": "assistant", "content": out.text, "provider_data": out.finish.provider_data}


async def test_spec_provider_executed_web_search_is_sent_natively_recorded_and_echoed(
    client, replay
):
    first, second = recordings.cassette("anthropic/messages_nonstream_web_search.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False, max_tokens=4096)
    thinking = ReasoningConfig(max_tokens=3000)
    search = [ProviderToolChoice("web_search")]
    history = [user("What is the weather in San Francisco today?")]

    out = await collect(
        provider,
        request(history, model="claude-sonnet-4-0", reasoning=thinking, provider_tools=search),
    )

    sent = replay.requests[0].json()
    assert sent["tools"] == _no_nulls(first.request_body["tools"])
    assert sent["tool_choice"] == {"type": "auto"}
    [done] = tools_of(out)
    assert (done.tool.name, done.tool.provider, done.tool.status) == (
        "web_search",
        "anthropic",
        "completed",
    )
    assert done.tool.result is not None
    assert done.tool.result["input"] == {"query": "San Francisco weather today"}
    [searched] = [e for e in out.events if isinstance(e, WebSearchDone)]
    assert searched.result["actions"][0]["sources"][0]["url"].startswith("https://www.accuweather")
    cites = citations_of(out)
    assert len(cites) == 9
    # Character offsets into the reply text: each span is the cited text block.
    assert out.text[cites[0].start : cites[0].end] == "Temperature: 66°F with clear skies"
    assert cites[0].url.startswith("https://www.accuweather.com/")
    assert cites[0].cited_text.startswith("San Francisco, CA Weather Today")
    assert out.finish.reason == "stop"

    history += [assistant(out), user("how about Mexico City?")]
    again = await collect(
        provider,
        request(history, model="claude-sonnet-4-0", reasoning=thinking, provider_tools=search),
    )

    echoed = replay.requests[1].json()["messages"]
    # The search and its encrypted results go back exactly as the recording's second turn.
    assert echoed == second.request_body["messages"]
    assert again.text.startswith("Based on the search results")
    assert tools_of(again)[0].tool.result["input"] == {"query": "Mexico City weather today"}


async def test_web_search_stream_turns_citations_deltas_into_spans(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_web_search.yaml")
    replay.queue(recorded.reply(chunk_size=61))
    provider = adapter(client, replay, stream=True)
    choice = ProviderToolChoice("web_search", {"max_uses": 3, "allowed_domains": ["weather.com"]})

    out = await collect(
        provider,
        request(
            [user("What is the current weather in San Francisco?")],
            model="claude-opus-4-1-20250805",
            provider_tools=[choice],
        ),
    )

    sent = replay.requests[0].json()
    assert sent["tools"] == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["weather.com"],
        }
    ]
    [done] = tools_of(out)
    assert done.tool.result["input"] == {"query": "San Francisco weather today"}
    assert len(done.tool.result["results"]) >= 1
    cites = citations_of(out)
    assert len(cites) == 5
    assert out.text[cites[0].start : cites[0].end].startswith("Today (November 15, 2025)")
    assert out.text[cites[1].start : cites[1].end] == "Winds are from the west at 10 to 15 mph."
    blocks = out.finish.provider_data["anthropic"]["blocks"]
    assert [b["type"] for b in blocks[:3]] == [
        "server_tool_use",
        "web_search_tool_result",
        "text",
    ]
    assert blocks[0]["input"] == {"query": "San Francisco weather today"}
    assert "citations" not in blocks[3]  # sent back without them, as the API expects


async def test_code_execution_is_recorded_with_its_output_and_container(client, replay):
    first, second = recordings.cassette("anthropic/messages_nonstream_code_execution.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False, max_tokens=4096)

    out = await collect(
        provider,
        request(
            [user("How much is 3 * 12390?")],
            model="claude-sonnet-4-6",
            system="Always use the code execution tool for math.",
            reasoning=ReasoningConfig(max_tokens=3000),
            provider_tools=[ProviderToolChoice("code_execution")],
        ),
    )

    assert replay.requests[0].json()["tools"] == first.request_body["tools"]
    [done] = tools_of(out)
    assert done.tool.name == "code_execution"
    assert done.tool.result["input"] == {"command": "echo $((3 * 12390))"}
    assert done.tool.result["output"] == "37170\n"
    assert out.text == "The result of **3 × 12,390 = 37,170**."
    data = out.finish.provider_data["anthropic"]
    assert data["container"]["id"] == "container_011CaNRhtVsGiXZx1CgSETLH"


async def test_code_execution_stream_records_the_result_block(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_code_execution.yaml")
    replay.queue(recorded.reply())
    provider = adapter(client, replay, stream=True)

    out = await collect(
        provider,
        request(
            [user(recorded.request_body["messages"][0]["content"])],
            model=recorded.request_body["model"],
            provider_tools=[ProviderToolChoice("code_execution")],
        ),
    )

    assert replay.requests[0].json()["tools"] == recorded.request_body["tools"]
    done = tools_of(out)
    assert done and all(d.tool.name == "code_execution" for d in done)
    assert done[0].tool.result["output"]
    assert out.finish.provider_data["anthropic"]["container"]["id"].startswith("container_")


async def test_a_tool_anthropic_does_not_run_fails_the_request_visibly(client, replay):
    provider = adapter(client, replay, stream=False)
    try:
        await collect(
            provider, request([user("hi")], provider_tools=[ProviderToolChoice("file_search")])
        )
    except Exception as exc:  # noqa: BLE001 - the adapter's error type is what is checked
        assert "file_search" in str(exc)
        assert getattr(exc, "code", None) == "invalid_request"
    else:
        raise AssertionError("an unknown provider tool was silently dropped")
    assert replay.requests == []


def test_web_search_options_are_checked_against_the_offer():
    from runtime.core.spec import ModelDefinition
    from runtime.providers.offers import option_errors, provider_offers

    offer = provider_offers(ModelDefinition(name="c", provider="anthropic", model="c"))[
        "web_search"
    ]
    assert option_errors(offer, {"max_uses": 3, "user_location": {"city": "Paris"}}) == []
    both = option_errors(offer, {"allowed_domains": ["a.com"], "blocked_domains": ["b.com"]})
    assert both == ["Give allowed_domains or blocked_domains, not both."]
    assert option_errors(offer, {"max_uses": "3"}) == ["max_uses: '3' is not of type 'integer'"]


def test_user_location_goes_out_with_its_kind():
    from runtime.providers.anthropic.server_tools import server_tools

    [tool] = server_tools([ProviderToolChoice("web_search", {"user_location": {"city": "Paris"}})])
    assert tool["user_location"] == {"type": "approximate", "city": "Paris"}
