"""OpenAI's provider-executed tools against the recorded exchanges, replayed over a socket:
Responses ``web_search`` / ``code_interpreter`` / ``file_search`` / ``image_generation`` sent
in native form and read back as ``ProviderToolDone`` / ``WebSearchDone`` / ``CitationsFound``
/ ``ImageDelta``; Chat search models' ``web_search_options`` and ``url_citation``s."""

from __future__ import annotations

from runtime.core.provider_tools import ProviderToolChoice
from runtime.core.spec import ReasoningConfig

from . import recordings
from .helpers import collect, request, user, without
from .responses_support import (
    adapter,
    assistant_turn,
    cited,
    images,
    jsonl_stream,
    searches,
    tools_done,
)

LOW = ReasoningConfig(effort="low")


def _choices(fixture_tools: list[dict]) -> list[ProviderToolChoice]:
    out = []
    for tool in fixture_tools:
        options = {k: v for k, v in tool.items() if k != "type"}
        if tool["type"] == "code_interpreter":
            options = {}
        out.append(ProviderToolChoice(tool["type"], options))
    return out


def _as_recorded(body: dict, model: str, **kw: object):
    """The neutral request for a recorded one-question body with provider tools."""
    if body.get("instructions"):
        kw["system"] = body["instructions"]
    question = [user(body["input"][0]["content"])]
    return request(question, model=model, provider_tools=_choices(body["tools"]), **kw)


async def test_web_search_call_and_url_citations(client, replay):
    [recorded] = recordings.cassette("openai/responses_nonstream_web_search_citations.yaml")
    replay.queue(recorded.reply())
    body = recorded.request_body

    out = await collect(
        adapter(client, replay, stream=False),
        _as_recorded(body, "gpt-5.2"),
    )

    [tool] = tools_done(out)
    assert (tool.tool.name, tool.tool.provider, tool.tool.status) == (
        "web_search",
        "openai",
        "completed",
    )
    assert tool.tool.result["input"]["queries"] == [
        "tallest mountain in Alberta",
        "Mount Columbia tallest mountain in Alberta elevation",
    ]
    [search] = searches(out)
    assert search.id == tool.tool.id and search.result["actions"][0]["query"]
    [citation] = cited(out)
    assert (citation.start, citation.end) == (126, 211)
    assert citation.url.startswith("https://www.britannica.com/place/Mount-Columbia")
    assert out.text[citation.start : citation.end] == citation.cited_text
    assert citation.cited_text.startswith("([britannica.com]")
    sent = replay.requests[0].json()
    # Named differences: we ask for the search sources too, and store nothing at OpenAI.
    assert sent["include"] == ["reasoning.encrypted_content", "web_search_call.action.sources"]
    assert without(sent, "include", "store") == without(body, "include")
    assert [i["type"] for i in out.finish.provider_data["openai"]["items"]] == [
        "web_search_call",
        "message",
    ]


async def test_streamed_web_search_and_annotation_offsets(client, replay):
    [recorded] = recordings.cassette("openai/responses_stream_web_search_citations.yaml")
    replay.queue(recorded.reply(chunk_size=71))
    body = recorded.request_body

    out = await collect(
        adapter(client, replay),
        _as_recorded(body, "gpt-5.2"),
    )

    assert len(searches(out)) == 2 and len(tools_done(out)) == 2
    assert searches(out)[1].result["actions"][0]["query"].startswith("Mount Columbia highest")
    [citation] = cited(out)
    assert (citation.start, citation.end) == (77, 162)
    assert out.text[77:162] == citation.cited_text
    assert without(replay.requests[0].json(), "include", "store") == without(body, "include")


async def test_spec_provider_metadata_must_round_trip_web_search_and_reasoning_items(
    client, replay
):
    first, second = recordings.cassette(
        "openai/responses_nonstream_web_search_history_roundtrip.yaml"
    )
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False)
    body = first.request_body
    kw = {
        "model": "gpt-5",
        "system": body["instructions"],
        "provider_tools": _choices(body["tools"]),
    }
    history = [user(body["input"][0]["content"])]

    out = await collect(provider, request(history, **kw))
    history += [assistant_turn(out), user("how about Mexico City?")]
    final = await collect(provider, request(history, **kw))

    assert "Mexico City" in final.text
    assert replay.requests[1].json()["input"] == second.request_body["input"]


async def test_code_interpreter_calls_and_reasoning_summaries(client, replay):
    first, second = recordings.cassette("openai/responses_nonstream_code_interpreter.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False)
    body = first.request_body
    kw = {"model": "gpt-5", "reasoning": LOW, "provider_tools": _choices(body["tools"])}
    history = [user(body["input"][0]["content"])]

    out = await collect(provider, request(history, **kw))

    [tool] = tools_done(out)
    assert tool.tool.name == "code_interpreter"
    assert tool.tool.result["output"] == "-428330955.97745"
    assert "65465 - 6544" in tool.tool.result["input"]["code"]
    assert out.reasoning.startswith("**Calculating expression order**")
    assert "**Considering numeric results**" in out.reasoning
    assert out.finish.usage.cached_tokens == 1280
    history += [assistant_turn(out), user("how about 2 to the power of 8?")]
    final = await collect(provider, request(history, **kw))

    assert final.text == "256"
    sent = [r.json() for r in replay.requests]
    # Named differences: the summary level (we ask "auto") and store:false.
    assert without(sent[0], "reasoning.summary", "store") == without(
        body, "reasoning.summary", "previous_response_id"
    )
    assert sent[1]["input"] == second.request_body["input"]


async def test_streamed_code_interpreter(client, replay):
    [recorded] = recordings.cassette("openai/responses_stream_code_interpreter.yaml")
    replay.queue(recorded.reply(chunk_size=301))
    body = recorded.request_body

    out = await collect(
        adapter(client, replay),
        _as_recorded(body, "gpt-5", reasoning=LOW),
    )

    assert [t.tool.name for t in tools_done(out)] == ["code_interpreter"] * 3
    assert tools_done(out)[0].tool.result["input"]["code"] == "n = pow(123456, 123)\nlen(str(n))"
    assert out.reasoning.startswith("**Calculating a large integer**")
    assert out.text.startswith("123456^123 equals:")
    kept = out.finish.provider_data["openai"]["items"]
    assert [i["type"] for i in kept][:2] == ["reasoning", "code_interpreter_call"]
    assert kept[1]["outputs"] is None and kept[0]["encrypted_content"]
    assert replay.requests[0].json()["include"] == [
        "reasoning.encrypted_content",
        "code_interpreter_call.outputs",
    ]


async def test_file_search_results_and_file_citation(client, replay):
    [recorded] = recordings.cassette("openai/responses_nonstream_file_search.yaml")
    replay.queue(recorded.reply())
    body = recorded.request_body

    out = await collect(
        adapter(client, replay, stream=False),
        _as_recorded(body, "gpt-4o"),
    )

    [tool] = tools_done(out)
    assert tool.tool.name == "file_search"
    assert tool.tool.result["results"][0]["text"].startswith("Paris is the capital")
    [citation] = cited(out)
    assert (citation.url, citation.title, citation.start) == (
        "openai-file:file-2b6dRdmXnzSrqiEbhVJZRU",
        "tmpd_9a5dki.txt",
        30,
    )
    assert without(replay.requests[0].json(), "store") == body


async def test_image_generation_call_becomes_an_image(client, replay):
    [recorded] = recordings.cassette("openai/responses_nonstream_image_generation.yaml")
    replay.queue(recorded.reply())
    body = recorded.request_body
    options = {"size": "auto", "quality": "auto", "background": "auto", "output_format": "jpeg"}

    out = await collect(
        adapter(client, replay, stream=False),
        request(
            [user(body["input"][0]["content"])],
            model="gpt-5",
            tool_choice="required",
            provider_tools=[ProviderToolChoice("image_generation", options)],
        ),
    )

    [image] = images(out)
    result = recorded.response_json()["output"][1]["result"]
    assert (image.media_type, image.data, image.index) == ("image/jpeg", result, 0)
    assert image.revised_prompt.startswith("Photorealistic close-up")
    [tool] = tools_done(out)
    assert tool.tool.name == "image_generation"
    kept = out.finish.provider_data["openai"]["items"]
    assert "result" not in kept[1]  # the image lives in the thread's files, not in the log
    sent = replay.requests[0].json()
    # Named difference: pydantic-ai also sends the options our offer does not expose.
    unexposed = ("input_fidelity", "moderation", "output_compression", "partial_images")
    assert sent["tools"] == without(body["tools"], *(f"0.{k}" for k in unexposed))
    assert sent["tool_choice"] == "required"


async def test_streamed_image_generation(client, replay):
    replay.queue(jsonl_stream("openai/responses_stream_image_generation.chunks.jsonl"))

    out = await collect(adapter(client, replay), request([user("draw")], model="gpt-5"))

    [image] = images(out)
    assert image.media_type == "image/webp" and image.data.startswith("UklGR")
    assert [t.tool.name for t in tools_done(out)] == ["image_generation"]
    assert out.text == "" and out.finish.reason == "stop"


# --- Chat Completions search models ----------------------------------------------------------


async def test_chat_search_model_sends_web_search_options_and_reads_url_citations(client, replay):
    from runtime.providers.openai.chat_completions import OpenAIProvider

    from .conftest import PLANTED_KEY

    [recorded] = recordings.cassette("openai/chat_nonstream_web_search_citations.yaml")
    replay.queue(recorded.reply())
    provider = OpenAIProvider(client, PLANTED_KEY, replay.url + "/v1", stream=False)
    question = recorded.request_body["messages"][0]["content"]

    out = await collect(
        provider,
        request(
            [user(question)],
            model="gpt-4o-mini-search-preview",
            provider_tools=[ProviderToolChoice("web_search")],
        ),
    )

    assert replay.requests[0].json() == recorded.request_body
    found = cited(out)
    assert [(c.start, c.end) for c in found] == [(96, 198), (293, 426), (542, 675)]
    assert all(out.text[c.start : c.end] == c.cited_text for c in found)
    assert found[0].title == "Ruby 3.4.7 Released | Ruby"
    assert out.events[-1] is out.finish


def test_provider_tools_offered_per_openai_api():
    from runtime.core.spec import ModelDefinition
    from runtime.providers.openai.offers import openai_offers

    def offers(**kw: object) -> list[str]:
        return sorted(openai_offers(ModelDefinition(name="m", provider="openai", **kw)))

    assert offers(model="gpt-5", api="responses") == [
        "code_interpreter",
        "file_search",
        "image_generation",
        "web_search",
    ]
    assert offers(model="gpt-4o-mini-search-preview") == ["web_search"]
    assert offers(model="gpt-4o") == []
    schema = openai_offers(
        ModelDefinition(name="m", provider="openai", model="x", api="responses")
    )["file_search"].options_schema
    assert schema["required"] == ["vector_store_ids"] and schema["additionalProperties"] is False


def test_native_forms_of_the_options():
    from runtime.providers.openai.offers import chat_web_search_options, responses_tool

    where = {"country": "FR", "city": "Paris"}
    search = ProviderToolChoice(
        "web_search",
        {"user_location": where, "filters": {"allowed_domains": ["example.org"]}},
    )
    assert responses_tool(search) == {
        "type": "web_search",
        "user_location": {"type": "approximate", **where},
        "filters": {"allowed_domains": ["example.org"]},
    }
    assert chat_web_search_options([search]) == {
        "user_location": {"type": "approximate", "approximate": where}
    }
    files = ProviderToolChoice("file_search", {"vector_store_ids": ["vs_1"], "max_num_results": 3})
    assert responses_tool(files) == {
        "type": "file_search",
        "vector_store_ids": ["vs_1"],
        "max_num_results": 3,
    }
    code = ProviderToolChoice("code_interpreter", {"file_ids": ["file_1"]})
    assert responses_tool(code) == {
        "type": "code_interpreter",
        "container": {"type": "auto", "file_ids": ["file_1"]},
    }
