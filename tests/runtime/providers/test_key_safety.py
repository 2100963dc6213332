"""An API key reaches the vendor in its auth header and nowhere else."""

from __future__ import annotations

import logging
import socket
import traceback

import httpx
import pytest

from runtime.core.spec import ModelDefinition
from runtime.providers import ProviderRegistry
from runtime.providers.adapter import wire_request
from runtime.providers.anthropic.provider import AnthropicProvider
from runtime.providers.base import ProviderError
from runtime.providers.errors import AdapterError
from runtime.providers.google.provider import GoogleProvider
from runtime.providers.openai.chat_completions import OpenAIProvider
from runtime.providers.openai.responses import OpenAIResponsesProvider
from runtime.providers.openrouter.provider import OpenRouterProvider
from runtime.providers.registry import install, key_resolver, store_env_lookup
from runtime.providers.retry import RetryPolicy, stream_with_fallbacks
from runtime.providers.test_provider import TestProvider

from .conftest import PLANTED_KEY
from .helpers import collect, request, user
from .replay import Reply

ADAPTERS = [
    (OpenAIProvider, "/v1", "authorization"),
    (OpenAIResponsesProvider, "/v1", "authorization"),
    (OpenRouterProvider, "/api/v1", "authorization"),
    (AnthropicProvider, "/v1", "x-api-key"),
    (GoogleProvider, "/v1beta", "x-goog-api-key"),
]


def _everything_said_about(error: BaseException) -> str:
    return "\n".join(
        [str(error), repr(error), "".join(traceback.format_exception(error))]
        + [str(v) for v in vars(error).values()]
    )


@pytest.mark.parametrize(("cls", "prefix", "header"), ADAPTERS)
async def test_401_that_echoes_the_key_never_leaks_it(client, replay, caplog, cls, prefix, header):
    caplog.set_level(logging.DEBUG)
    # A vendor that quotes the key back in its error (OpenAI does, partly masked).
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {PLANTED_KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    replay.queue(Reply.json(echo, 401))
    provider = cls(client, PLANTED_KEY, replay.url + prefix)

    with pytest.raises(AdapterError) as caught:
        await collect(provider, request([user("hi")]))

    assert caught.value.code == "authentication"
    assert PLANTED_KEY not in _everything_said_about(caught.value)
    assert "[redacted]" in caught.value.message
    assert PLANTED_KEY not in caplog.text
    assert PLANTED_KEY in replay.requests[0].headers[header]  # it was used, in the header


@pytest.mark.parametrize(("cls", "prefix", "header"), ADAPTERS)
async def test_connection_error_never_leaks_the_key(caplog, cls, prefix, header):
    caplog.set_level(logging.DEBUG)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with httpx.AsyncClient() as client:
        provider = cls(client, PLANTED_KEY, f"http://127.0.0.1:{port}{prefix}")
        with pytest.raises(AdapterError) as caught:
            await collect(provider, request([user("hi")]))

    assert (caught.value.code, caught.value.retryable) == ("network", True)
    # No chained httpx error: it would carry the request, and the request the key.
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert PLANTED_KEY not in _everything_said_about(caught.value)
    assert PLANTED_KEY not in caplog.text


@pytest.mark.parametrize(("cls", "prefix", "header"), ADAPTERS)
def test_reprs_and_built_requests_hold_no_key(cls, prefix, header):
    provider = cls(httpx.AsyncClient(), PLANTED_KEY)
    built = provider.build_request(request([user("hi")]))
    logged = wire_request(provider, request([user("hi")]))

    for text in (repr(provider), str(provider), repr(built), str(built.dump()), str(logged)):
        assert PLANTED_KEY not in text
    assert header not in built.headers
    assert logged is not None and logged == built.dump() and "test-model" in str(logged)
    assert wire_request(TestProvider(), request([user("hi")])) is None


async def test_the_ladder_error_and_reports_hold_no_key(client, replay):
    replay.queue(
        *[
            Reply.json(
                {"error": {"message": f"bad key {PLANTED_KEY}", "type": "authentication_error"}},
                401,
            )
        ]
        * 2
    )
    chain = [
        ModelDefinition(name=n, provider="anthropic", model="m", base_url=replay.url + "/v1")
        for n in ("a", "b")
    ]
    reports: list = []

    with pytest.raises(ProviderError) as caught:
        async for _ in stream_with_fallbacks(
            chain,
            lambda m: AnthropicProvider(client, PLANTED_KEY, m.base_url),
            lambda m: request([user("hi")]),
            policy=RetryPolicy(base_delay=0),
            on_event=reports.append,
        ):
            pass

    assert PLANTED_KEY not in _everything_said_about(caught.value)
    assert all(PLANTED_KEY not in repr(r) for r in reports)


async def test_missing_key_is_an_authentication_error_naming_the_variable(client, replay):
    provider = OpenAIProvider(client, key_resolver("openai", environ={}), replay.url)

    with pytest.raises(AdapterError) as caught:
        await collect(provider, request([user("hi")]))

    assert caught.value.code == "authentication" and "OPENAI_API_KEY" in caught.value.message
    assert replay.requests == []


async def test_keys_resolve_through_the_env_chain_then_the_process_env(client, replay):
    class Entry:
        def __init__(self, value):
            self.value = value

    class Store:
        def __init__(self):
            self.asked = []

        async def resolve_env(self, thread_id, name, prompt=None):
            self.asked.append((thread_id, name, prompt))
            return Entry("sk-from-thread") if thread_id == "t1" else None

    store = Store()
    resolve = key_resolver(
        "anthropic", store_env_lookup(store), environ={"ANTHROPIC_API_KEY": "sk-from-process"}
    )

    from_thread = await resolve(
        request([user("x")], metadata={"thread_id": "t1", "prompt_name": "p"})
    )
    from_process = await resolve(request([user("x")], metadata={"thread_id": "t2"}))

    assert (from_thread, from_process) == ("sk-from-thread", "sk-from-process")
    assert store.asked[0] == ("t1", "ANTHROPIC_API_KEY", "p")


async def test_installed_registry_builds_adapters_from_model_definitions(client, replay):
    registry = install(ProviderRegistry(), client, environ={"GOOGLE_API_KEY": PLANTED_KEY})
    model = ModelDefinition(
        name="flash", provider="google", model="gemini-2.5-flash", base_url=replay.url + "/v1beta"
    )

    provider = registry.for_model(model)

    assert isinstance(provider, GoogleProvider) and provider.base_url == replay.url + "/v1beta"
    assert PLANTED_KEY not in repr(provider)
    assert registry.for_model(ModelDefinition(name="t", provider="test", model="x")).name == "test"
