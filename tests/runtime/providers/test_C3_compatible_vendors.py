"""Row C3 (spec 0.2.0): groq, xai, cerebras, deepinfra, novita and cloudflare (Workers AI) as
provider names, each an OpenAI-compatible base with its documented host and key name.

Each vendor's request goes through the engine to the replay server (a real socket on
127.0.0.1) answering with a recorded OpenAI Chat Completions stream (the wire these vendors
speak); what the socket received is checked: path, key header, body.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core import egress
from runtime.core.spec import ModelDefinition
from runtime.providers.registry import ADAPTERS, KEY_NAMES, install, store_env_lookup
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY
from .replay import Reply

VENDORS = ("groq", "xai", "cerebras", "deepinfra", "novita", "cloudflare")
# The documented OpenAI-compatible bases (runtime/providers/compatible/builtin.py names
# each vendor's page) and the reference's key names (reference-behavior.md §5.3).
DOCUMENTED = {
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "cerebras": ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
    "deepinfra": ("https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY"),
    "novita": ("https://api.novita.ai/v3/openai", "NOVITA_API_KEY"),
    "cloudflare": (
        "https://api.cloudflare.com/client/v4/accounts/{account_id}/ai/v1",
        "CLOUDFLARE_API_TOKEN",
    ),
}
ACCOUNT = "acct-0123456789abcdef"


class MultiplyArgs(BaseModel):
    a: int
    b: int


@define_tool("Multiply two numbers.", MultiplyArgs)
async def multiply(state: Any, args: MultiplyArgs) -> str:
    return str(args.a * args.b)


def _path_of(vendor: str) -> str:
    """The documented base's path, with the account slot as the thread's env fills it."""
    base = DOCUMENTED[vendor][0].replace("{account_id}", ACCOUNT)
    return base.split("://", 1)[1].split("/", 1)[1]


def test_C3_default_hosts_and_key_names_are_the_documented_ones() -> None:
    found = {v: (ADAPTERS[v].default_base_url, KEY_NAMES[v]) for v in VENDORS}
    assert found == DOCUMENTED
    # The egress key rule knows each vendor's own host, and only that one.
    for vendor in VENDORS:
        own = DOCUMENTED[vendor][0].replace("{account_id}", ACCOUNT)
        assert egress.is_official_host(vendor, own)
        for other in VENDORS:
            if other != vendor:
                elsewhere = DOCUMENTED[other][0].replace("{account_id}", ACCOUNT)
                assert not egress.is_official_host(vendor, elsewhere), (vendor, other)


@pytest.mark.parametrize("vendor", VENDORS)
async def test_C3_each_vendor_through_the_engine(
    world: World, replay, client, caplog, vendor: str
) -> None:
    caplog.set_level(logging.DEBUG)
    interactions = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")
    replay.queue(*(i.reply() for i in interactions))
    # Every vendor's key is in the process env: only this vendor's may reach its socket.
    others = {KEY_NAMES[v]: f"other-key-of-{v}" for v in VENDORS if v != vendor}
    install(world.providers, client, env_lookup=store_env_lookup(world.store), environ=others)
    world.register(multiply)
    # The base URL keeps the vendor's path (and Workers AI's account slot) on the local socket.
    base = replay.url + "/" + DOCUMENTED[vendor][0].split("://", 1)[1].split("/", 1)[1]
    world.define(
        ModelDefinition(name="m", provider=vendor, model="gpt-4o-mini", base_url=base),
        prompt(tools=["multiply"], text="You are a helpful chatbot."),
        agent(),
    )
    env = {KEY_NAMES[vendor]: PLANTED_KEY}
    if vendor == "cloudflare":
        env["CLOUDFLARE_ACCOUNT_ID"] = ACCOUNT
    thread = await world.thread(env=env)

    result = await world.run(thread.id, "Please use the tool.")

    assert result.stop_reason == "stop_on_response"
    sent = replay.requests
    assert [r.path for r in sent] == [f"/{_path_of(vendor)}/chat/completions"] * 2
    assert [r.headers["authorization"] for r in sent] == [f"Bearer {PLANTED_KEY}"] * 2
    assert all(key not in json.dumps(r.headers) for r in sent for key in others.values())
    assert sent[0].json()["model"] == "gpt-4o-mini" and sent[0].json()["stream"] is True
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert [log.provider for log in logs] == [vendor, vendor]
    assert all(log.is_complete for log in logs)
    assert PLANTED_KEY not in json.dumps([log.request_body for log in logs]) + caplog.text
    final = (await world.messages(thread.id))[-1]
    assert final.role == "assistant" and final.content


async def test_C3_workers_ai_without_an_account_id_is_refused_with_a_sentence(
    world: World, replay, client
) -> None:
    install(world.providers, client, environ={"CLOUDFLARE_API_TOKEN": PLANTED_KEY})
    world.define(
        ModelDefinition(name="m", provider="cloudflare", model="@cf/meta/llama-3.1-8b-instruct"),
        prompt(),
        agent(),
    )
    thread = await world.thread()

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "step_error"
    assert replay.requests == []  # nothing left the process
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert logs[-1].error == (
        "Missing required environment variables for provider 'cloudflare': CLOUDFLARE_ACCOUNT_ID"
    )


async def test_C3_instance_key_is_withheld_from_another_vendors_host(
    world: World, replay, client
) -> None:
    """The key rule (docs/security.md) sees the vendor: Groq's instance key aimed at
    xAI's host is not sent (a rule that asks ``is_official_host``, as the platform's does)."""
    replay.queue(Reply.json({}))

    async def rule(provider: str, source: str, base_url: str | None) -> str | None:
        if source == "thread" or egress.is_official_host(provider, base_url):
            return None
        return f"{KEY_NAMES[provider]} was not sent to {egress.host_of(base_url)}"

    install(world.providers, client, environ={"GROQ_API_KEY": PLANTED_KEY}, key_rule=rule)
    world.define(
        ModelDefinition(name="m", provider="groq", model="x", base_url="https://api.x.ai/v1"),
        prompt(),
        agent(),
    )
    thread = await world.thread()

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "step_error"
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert logs[-1].error == "GROQ_API_KEY was not sent to api.x.ai"
    assert replay.requests == []


async def test_C3_a_vendor_lists_its_models_through_the_openai_shape(replay, client) -> None:
    """No recording of these vendors' ``GET /models`` exists (fixtures INDEX.md): the body is
    OpenAI's documented list shape, which they serve."""
    from runtime.providers import discovery

    listed = {"object": "list", "data": [{"id": "llama-3.3-70b-versatile", "created": 7}]}
    replay.queue(Reply.json(listed))

    models = await discovery.list_models("groq", client, PLANTED_KEY, replay.url + "/openai/v1")

    assert [(m.id, m.icon_id) for m in models] == [("llama-3.3-70b-versatile", "groq")]
    [sent] = replay.requests
    assert (sent.method, sent.path) == ("GET", "/openai/v1/models")
    assert sent.headers["authorization"] == f"Bearer {PLANTED_KEY}"
    # Workers AI's default address needs the account id, which only a thread's env gives.
    assert not discovery.can_list("cloudflare")
    assert discovery.can_list(
        "cloudflare", f"https://api.cloudflare.com/client/v4/accounts/{ACCOUNT}/ai/v1"
    )
