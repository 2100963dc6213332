"""Gemini's own tools (Google Search grounding, code execution) replayed from the recordings:
sent as ``googleSearch`` / ``codeExecution``, recorded as provider tool results and
citations (byte offsets converted to characters), code parts sent back with their
signatures, never run here."""

from __future__ import annotations

from typing import Any

from runtime.core.provider_tools import (
    CitationsFound,
    ProviderToolChoice,
    ProviderToolDone,
    WebSearchDone,
)
from runtime.providers.google.provider import GoogleProvider
from runtime.providers.google.server_tools import byte_to_char

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import Collected, collect, request, user


def adapter(client: Any, replay: Any, **kw: Any) -> GoogleProvider:
    return GoogleProvider(client, PLANTED_KEY, replay.url + "/v1beta", **kw)


def tools_of(out: Collected) -> list[ProviderToolDone]:
    return [e for e in out.events if isinstance(e, ProviderToolDone)]


def citations_of(out: Collected) -> list[Any]:
    return [c for e in out.events if isinstance(e, CitationsFound) for c in e.citations]


def _standard_b64(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recording client re-encoded signatures base64url; the API takes either alphabet."""
    out = []
    for part in parts:
        part = dict(part)
        if "thoughtSignature" in part:
            part["thoughtSignature"] = part["thoughtSignature"].replace("-", "+").replace("_", "/")
        out.append(part)
    return out


def test_byte_offsets_become_character_offsets():
    text = "°F é ok"
    assert byte_to_char(text, len("°F é".encode())) == len("°F é")
    assert byte_to_char(text, 0) == 0


async def test_google_search_grounding_records_the_search_and_cites_spans(client, replay):
    first, second = recordings.cassette("gemini/generate_google_search_grounding.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False)
    search = [ProviderToolChoice("google_search")]
    history = [user("What is the weather in San Francisco today?")]

    out = await collect(
        provider,
        request(
            history,
            model="gemini-2.5-pro",
            system="You are a helpful chatbot.",
            provider_tools=search,
        ),
    )

    sent = replay.requests[0].json()
    assert sent["tools"] == [{"googleSearch": {}}]
    [done] = tools_of(out)
    assert done.tool.name == "google_search" and done.tool.provider == "google"
    assert done.tool.result["input"] == {"queries": ["weather in San Francisco today"]}
    [searched] = [e for e in out.events if isinstance(e, WebSearchDone)]
    assert searched.result["actions"][0]["query"] == "weather in San Francisco today"
    cites = citations_of(out)
    supports = first.response_json()["candidates"][0]["groundingMetadata"]["groundingSupports"]
    assert len(cites) == sum(len(s["groundingChunkIndices"]) for s in supports)
    # The text has "°" before the spans: byte offsets would cut them wrongly.
    assert out.text[cites[0].start : cites[0].end] == supports[0]["segment"]["text"]
    assert out.text[cites[-1].start : cites[-1].end] == supports[-1]["segment"]["text"]

    history += [
        {"role": "assistant", "content": out.text, "provider_data": out.finish.provider_data},
        user(second.request_body["contents"][2]["parts"][0]["text"]),
    ]
    await collect(provider, request(history, model="gemini-2.5-pro", provider_tools=search))
    assert replay.requests[1].json()["contents"] == second.request_body["contents"]


async def test_google_search_grounding_stream_cites_the_streamed_text(client, replay):
    [recorded] = recordings.cassette("gemini/stream_google_search_grounding.yaml")
    replay.queue(recorded.reply())
    provider = adapter(client, replay, stream=True)

    out = await collect(
        provider,
        request(
            [user("What is the weather in San Francisco today?")],
            model="gemini-2.5-pro",
            provider_tools=[ProviderToolChoice("google_search")],
        ),
    )

    assert replay.requests[0].json()["tools"] == [{"googleSearch": {}}]
    assert len(tools_of(out)) == 1
    cites = citations_of(out)
    assert cites
    for cite in cites:
        assert cite.cited_text is None or out.text[cite.start : cite.end] == cite.cited_text


async def test_spec_code_execution_parts_are_recorded_and_sent_back_not_run(client, replay):
    first, second = recordings.cassette("gemini/generate_code_execution.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False)
    code = [ProviderToolChoice("code_execution")]
    history = [user("What day is today in Utrecht?")]

    out = await collect(
        provider,
        request(
            history,
            model="gemini-3-flash-preview",
            system="You are a helpful chatbot.",
            provider_tools=code,
        ),
    )

    assert replay.requests[0].json()["tools"] == [{"codeExecution": {}}]
    runs = tools_of(out)
    assert [r.tool.id for r in runs] == ["h0mwtrhs", "7lr99y60"]
    assert runs[0].tool.result["output"] == "Current day in Utrecht: Tuesday, May 05, 2026\n"
    assert runs[0].tool.result["input"]["language"] == "PYTHON"
    assert out.text.startswith("Today is **Thursday, May 23, 2024**")

    history += [
        {"role": "assistant", "content": out.text, "provider_data": out.finish.provider_data},
        user("What day is tomorrow?"),
    ]
    await collect(provider, request(history, model="gemini-3-flash-preview", provider_tools=code))
    echoed = replay.requests[1].json()["contents"][1]
    assert echoed["role"] == "model"
    assert _standard_b64(echoed["parts"]) == _standard_b64(
        second.request_body["contents"][1]["parts"]
    )


async def test_code_execution_stream_records_each_run(client, replay):
    [recorded] = recordings.cassette("gemini/stream_code_execution.yaml")
    replay.queue(recorded.reply())
    provider = adapter(client, replay, stream=True)

    out = await collect(
        provider,
        request(
            [user("what is 65465-6544 * 65464-6+1.02255")],
            model="gemini-3-flash-preview",
            provider_tools=[ProviderToolChoice("code_execution")],
        ),
    )

    assert replay.requests[0].json()["tools"] == [{"codeExecution": {}}]
    [run] = tools_of(out)
    assert run.tool.id == "8xju7mua"
    assert "65465 - 6544 * 65464" in run.tool.result["input"]["code"]
    assert run.tool.status == "completed" and run.tool.result["output"]
    parts = out.finish.provider_data["google"]["parts"]
    kinds = [next(k for k in p if k != "thoughtSignature") for p in parts]
    assert kinds.index("executableCode") < kinds.index("codeExecutionResult")
    assert parts[0]["thoughtSignature"]  # kept on its part, to be sent back
