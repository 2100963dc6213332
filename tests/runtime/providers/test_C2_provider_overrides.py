"""Row C2 (spec 0.2.0), method overrides: a ``define_provider`` definition in a project's
``agents/providers/`` may replace its adapter's ``build_request``, ``parse_body`` and
``stream`` with functions (``ProviderSyncOverride`` / ``ProviderOverride``); the engine runs
them. The vendor is the replay server (a real socket on 127.0.0.1): what it received and
what the thread stored are checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.core.spec import ModelDefinition
from runtime.providers.compatible.definition import ProviderDefinitionError, define_provider
from runtime.providers.registry import discover_providers, install, known_providers, undefine
from runtime.store.protocol import LogQuery
from tests.runtime.conftest import World, agent, prompt

from . import recordings

KEY = "sk-shaped-PLANTED-5e1c0a77"

SHAPED = """
import dataclasses

from runtime.providers.compatible.definition import define_provider


def build_request(ctx, request):
    prepared = ctx.base(request)
    body = {**prepared.body, "model": "vendor-" + prepared.body["model"], "user": "override"}
    headers = {**prepared.headers, "x-shaped-by": ctx.provider}
    return dataclasses.replace(prepared, url=prepared.url + "?tier=gold", headers=headers,
                               body=body)


shaped = define_provider(
    name="shaped",
    base_url="{base}/v1",
    api_key={"default_env": "SHAPED_API_KEY"},
    overrides={"build_request": build_request},
)
"""

LOUD = """
from runtime.providers.base import TextDelta
from runtime.providers.compatible.definition import define_provider


async def stream(ctx, request):
    async for event in ctx.base(request):
        if isinstance(event, TextDelta):
            event = TextDelta(event.text.upper().replace("A", "4"))
        yield event


loud = define_provider(
    name="loud",
    base_url="{base}/v1",
    api_key={"default_env": "LOUD_API_KEY"},
    overrides={"stream": stream},
)
"""

QUIET = """
from runtime.providers.compatible.definition import define_provider


def parse_body(ctx, payload, request):
    payload["choices"][0]["message"]["content"] += " (checked by quiet)"
    return ctx.base(payload, request)


quiet = define_provider(
    name="quiet",
    base_url="{base}/v1",
    api_key={"default_env": "QUIET_API_KEY"},
    overrides={"parse_body": parse_body},
)
"""

BROKEN = """
from runtime.providers.compatible.definition import define_provider


def build_request(ctx, request):
    return {"not": "a request"}


broken = define_provider(
    name="broken",
    base_url="{base}/v1",
    api_key={"default_env": "BROKEN_API_KEY"},
    overrides={"build_request": build_request},
)
"""


@pytest.fixture
def folder(tmp_path: Path, replay) -> Iterator[Path]:
    known_providers()  # the app's own providers first (see test_C2_define_provider.py)
    providers = tmp_path / "agents" / "providers"
    providers.mkdir(parents=True)
    for name, text in (("shaped", SHAPED), ("loud", LOUD), ("quiet", QUIET), ("broken", BROKEN)):
        (providers / f"{name}.py").write_text(text.replace("{base}", replay.url))
    try:
        discover_providers([tmp_path])
        yield tmp_path
    finally:
        for name in ("shaped", "loud", "quiet", "broken"):
            undefine(name)


def _final_reply(replay) -> None:
    replay.queue(recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1].reply())


async def test_C2_override_build_request_changes_what_the_vendor_receives(
    world: World, replay, client, folder: Path
) -> None:
    _final_reply(replay)
    install(world.providers, client, environ={"SHAPED_API_KEY": KEY})
    world.define(ModelDefinition(name="m", provider="shaped", model="large"), prompt(), agent())
    thread = await world.thread()

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "stop_on_response"
    [sent] = replay.requests
    assert sent.path == "/v1/chat/completions?tier=gold"
    assert sent.headers["x-shaped-by"] == "shaped"
    assert sent.headers["authorization"] == f"Bearer {KEY}"  # the key still added at send
    body = sent.json()
    assert (body["model"], body["user"]) == ("vendor-large", "override")
    # The log keeps the overridden request, without the key.
    [log] = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert log.request_body is not None
    assert log.request_body["body"]["model"] == "vendor-large"
    assert KEY not in str(log.request_body)


async def test_C2_override_stream_post_processes_what_the_thread_stores(
    world: World, replay, client, folder: Path
) -> None:
    _final_reply(replay)
    install(world.providers, client, environ={"LOUD_API_KEY": KEY})
    world.define(ModelDefinition(name="m", provider="loud", model="small"), prompt(), agent())
    thread = await world.thread()

    await world.run(thread.id, "hi")

    [sent] = replay.requests
    assert sent.json()["model"] == "small"  # the request is the base adapter's
    reply = (await world.messages(thread.id))[-1]
    assert reply.role == "assistant"
    text = str(reply.content)
    vendor_text = "".join(
        event.text
        for event in _base_events("openai/chat_stream_tool_call_roundtrip.yaml")
        if hasattr(event, "text")
    )
    assert text == vendor_text.upper().replace("A", "4") and text != vendor_text


async def test_C2_override_parse_body_post_processes_a_non_streamed_response(
    world: World, replay, client, folder: Path
) -> None:
    replay.queue(recordings.cassette("openai/chat_nonstream_cached_tokens.yaml")[0].reply())
    install(world.providers, client, environ={"QUIET_API_KEY": KEY}, stream=False)
    world.define(ModelDefinition(name="m", provider="quiet", model="q"), prompt(), agent())
    thread = await world.thread()

    await world.run(thread.id, "hi")

    [sent] = replay.requests
    assert sent.json()["stream"] is False
    reply = (await world.messages(thread.id))[-1]
    assert (reply.role, reply.content) == ("assistant", "OK (checked by quiet)")


def _base_events(name: str) -> list[Any]:
    """The cassette's reply as the plain OpenAI parser reads it (what no override changed)."""
    from runtime.providers.openai.chat_completions import ChatStreamParser
    from runtime.providers.sse import SSEDecoder

    decoder, parser = SSEDecoder(), ChatStreamParser()
    sse = [*decoder.feed(recordings.cassette(name)[1].body), *decoder.close()]
    return [event for item in sse for event in parser.feed(item)]


async def test_C2_override_returning_the_wrong_type_fails_the_step_with_a_sentence(
    world: World, replay, client, folder: Path
) -> None:
    install(world.providers, client, environ={"BROKEN_API_KEY": KEY})
    world.define(ModelDefinition(name="m", provider="broken", model="x"), prompt(), agent())
    thread = await world.thread()

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "step_error" and replay.requests == []
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert logs[-1].error == (
        "Provider 'broken': the build_request override failed: it returned a dict, not a "
        "PreparedRequest (return ctx.base(request), or a dataclasses.replace of it)"
    )


def _sync(ctx: Any, request: Any) -> Any:
    return ctx.base(request)


async def _gen(ctx: Any, request: Any) -> Any:
    yield None


def _one_arg(ctx: Any) -> Any:
    return None


@pytest.mark.parametrize(
    ("overrides", "sentence"),
    [
        (
            {"generate": _sync},
            "define_provider p: there is no method 'generate' to override (overridable: "
            "build_request, parse_body, stream)",
        ),
        (
            {"build_request": "nope"},
            "define_provider p: the override of 'build_request' is not callable",
        ),
        (
            {"stream": _sync},
            "define_provider p: the override of 'stream' must be an async generator function "
            "(async def with yield)",
        ),
        (
            {"parse_body": _gen},
            "define_provider p: the override of 'parse_body' must be a plain (sync) function",
        ),
        (
            {"build_request": _one_arg},
            "define_provider p: the override of 'build_request' must take 2 positional "
            "arguments (the context, then the method's own)",
        ),
        ([_sync], "define_provider p: overrides must map method names to functions"),
    ],
)
def test_C2_override_malformed_overrides_are_refused_at_definition(
    overrides: Any, sentence: str
) -> None:
    with pytest.raises(ProviderDefinitionError) as caught:
        define_provider(name="p", base_url="https://x.example/v1", overrides=overrides)
    assert str(caught.value) == sentence
