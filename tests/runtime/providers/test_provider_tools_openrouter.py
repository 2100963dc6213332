"""OpenRouter's web search server tool replayed from the recordings: sent as
``openrouter:web_search`` with its parameters, the ``url_citation`` annotations recorded as
the search's sources and the answer's citations (streamed and not)."""

from __future__ import annotations

from typing import Any

from runtime.core.provider_tools import CitationsFound, ProviderToolChoice, ProviderToolDone
from runtime.providers.openrouter.provider import OpenRouterProvider

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import Collected, collect, request, user

SEARCH = ProviderToolChoice("web_search", {"max_uses": 1, "search_context_size": "medium"})
QUESTION = "Use web search to find Pydantic AI's GitHub repository and answer with its URL only."


def adapter(client: Any, replay: Any, **kw: Any) -> OpenRouterProvider:
    return OpenRouterProvider(client, PLANTED_KEY, replay.url + "/api/v1", **kw)


def tools_of(out: Collected) -> list[ProviderToolDone]:
    return [e for e in out.events if isinstance(e, ProviderToolDone)]


def citations_of(out: Collected) -> list[Any]:
    return [c for e in out.events if isinstance(e, CitationsFound) for c in e.citations]


async def test_web_search_is_sent_as_openrouter_server_tool_and_citations_recorded(client, replay):
    [recorded] = recordings.cassette("openrouter/chat_nonstream_web_search_citations.yaml")
    replay.queue(recorded.reply())
    provider = adapter(client, replay, stream=False)

    out = await collect(
        provider, request([user(QUESTION)], model="deepseek/deepseek-chat", provider_tools=[SEARCH])
    )

    sent = replay.requests[0].json()
    assert sent["tools"] == recorded.request_body["tools"]
    assert out.text == "https://github.com/pydantic/pydantic-ai"
    [done] = tools_of(out)
    assert (done.tool.name, done.tool.provider) == ("web_search", "openrouter")
    assert done.tool.metadata == {"web_search_requests": 1}
    cites = citations_of(out)
    assert len(cites) == 5
    assert cites[0].url == "https://github.com/pydantic/pydantic-ai"
    assert cites[0].title == "AI Agent Framework, the Pydantic way"
    assert cites[1].title is None  # an empty title is no title
    assert (cites[0].start, cites[0].end) == (None, None)  # 0..0: the page, no span


async def test_web_search_stream_collects_annotation_deltas(client, replay):
    [recorded] = recordings.cassette("openrouter/chat_stream_web_search_citations.yaml")
    replay.queue(recorded.reply(chunk_size=53))
    provider = adapter(client, replay, stream=True)

    out = await collect(
        provider, request([user(QUESTION)], model="deepseek/deepseek-chat", provider_tools=[SEARCH])
    )

    assert replay.requests[0].json()["tools"] == recorded.request_body["tools"]
    assert "https://github.com/pydantic/pydantic-ai" in out.text
    assert len(tools_of(out)) == 1
    urls = [c.url for c in citations_of(out)]
    assert urls[0] == "https://github.com/pydantic/pydantic-ai"
    assert len(urls) == 5
    assert out.finish.reason == "stop"
