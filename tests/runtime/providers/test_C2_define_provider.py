"""Row C2 (spec 0.2.0): ``define_provider`` in ``agents/providers/`` makes a named provider over
an OpenAI-compatible base with typed config slots; a model naming it runs through the engine.

The provider file is discovered from a project folder, as tools are; the vendor is the replay
server (a real socket on 127.0.0.1). Checked at the socket: path from the URL template,
headers from slots (constant, env, secret), the key; checked everywhere else: no secret.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.core import egress
from runtime.core.spec import ModelDefinition
from runtime.definitions.validation import validate_model
from runtime.providers.compatible.definition import ProviderDefinitionError, define_provider
from runtime.providers.registry import (
    KEY_NAMES,
    discover_providers,
    install,
    known_providers,
    provider_env,
    store_env_lookup,
    undefine,
)
from runtime.store.protocol import LogQuery
from tests.runtime.conftest import World, agent, prompt

from . import recordings

SECRET = "tok-PLANTED-2c9f61a0-never-log-me"
KEY = "sk-acme-PLANTED-91be77d3"

ACME = """
from runtime.providers.compatible.definition import define_provider

acme = define_provider(
    name="acme",
    label="Acme Cloud",
    base_url="{base}/tenants/{tenant}/v1",
    api_key={"default_env": "ACME_API_KEY", "required": True},
    config={
        "tenant": {"type": "text", "default_env": "ACME_TENANT", "required": True,
                   "description": "Your tenant id."},
        "region": {"type": "text", "default": "eu-west", "description": "Served from."},
        "beta": {"type": "boolean", "default": True},
        "gateway_token": {"type": "secret", "default_env": "ACME_GATEWAY_TOKEN"},
    },
    headers={
        "x-acme-region": "{region}",
        "x-acme-beta": "{beta}",
        "x-acme-gateway": "Bearer {gateway_token}",
    },
    hosts=["api.acme.example"],
)
"""


@pytest.fixture
def acme_folder(tmp_path: Path, replay) -> Iterator[Path]:
    # The app's own providers load on first use (agents_app's loader, a reload of the code
    # forgets other folders' definitions): load them now, as a running server has, so the
    # folder discovered here is not forgotten by that first load.
    known_providers()
    providers = tmp_path / "agents" / "providers"
    providers.mkdir(parents=True)
    (providers / "acme.py").write_text(ACME.replace("{base}", replay.url))
    (providers / "_private.py").write_text(
        "raise RuntimeError('files starting with _ are skipped')"
    )
    try:
        yield tmp_path
    finally:
        undefine("acme")


def test_C2_discovery_registers_the_provider_with_its_slots(acme_folder: Path) -> None:
    [found] = discover_providers([acme_folder])

    assert found.name == "acme" and found.origin.endswith("agents/providers/acme.py")
    assert "acme" in known_providers() and KEY_NAMES["acme"] == "ACME_API_KEY"
    assert [s.name for s in found.slots] == ["api_key", "tenant", "region", "beta", "gateway_token"]
    assert provider_env("acme") == [
        ("ACME_API_KEY", True, True, "Provider API key"),
        ("ACME_TENANT", False, True, "Your tenant id."),
        ("ACME_GATEWAY_TOKEN", True, False, "gateway_token"),
    ]
    # The egress key rule knows the vendor's own host.
    assert egress.is_official_host("acme", "https://api.acme.example/v1")
    assert validate_model(ModelDefinition(name="m", provider="acme", model="a-1")) == []
    # Discovering the same folder again keeps one definition (a restart, a second scan).
    discover_providers([acme_folder])
    assert list(known_providers()).count("acme") == 1


async def test_C2_a_model_on_a_defined_provider_runs_through_the_engine(
    world: World, replay, client, caplog, acme_folder: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    discover_providers([acme_folder])
    replay.queue(recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1].reply())
    install(world.providers, client, env_lookup=store_env_lookup(world.store), environ={})
    world.define(ModelDefinition(name="m", provider="acme", model="acme-large"), prompt(), agent())
    thread = await world.thread(
        env={"ACME_API_KEY": KEY, "ACME_TENANT": "t-42", "ACME_GATEWAY_TOKEN": SECRET}
    )

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "stop_on_response"
    [sent] = replay.requests
    assert sent.path == "/tenants/t-42/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["x-acme-region"] == "eu-west"  # a constant default
    assert sent.headers["x-acme-beta"] == "true"
    assert sent.headers["x-acme-gateway"] == f"Bearer {SECRET}"  # a secret slot, at send time
    assert sent.json()["model"] == "acme-large"
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    stored = [
        *(json.dumps(dataclasses.asdict(log), default=str) for log in logs),
        *(json.dumps(frame, default=str) for frame in world.sink.frames[thread.id]),
        *(json.dumps(m.to_dict(), default=str) for m in await world.messages(thread.id)),
        repr(result),
        caplog.text,
    ]
    assert all(SECRET not in text and KEY not in text for text in stored)
    # The log keeps the request without credentials: constants filled in, env-backed slots
    # as their placeholder, no secret header.
    logged = logs[0].request_body
    assert logged is not None and logged["url"].endswith("/tenants/{tenant}/v1/chat/completions")
    assert logged["headers"]["x-acme-region"] == "eu-west"
    assert "x-acme-gateway" not in logged["headers"]


async def test_C2_a_missing_required_slot_is_named_and_nothing_is_sent(
    world: World, replay, client, acme_folder: Path
) -> None:
    discover_providers([acme_folder])
    install(world.providers, client, environ={"ACME_API_KEY": KEY})
    world.define(ModelDefinition(name="m", provider="acme", model="a"), prompt(), agent())
    thread = await world.thread()

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "step_error" and replay.requests == []
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert (
        logs[-1].error == "Missing required environment variables for provider 'acme': ACME_TENANT"
    )


async def test_C2_a_secret_the_vendor_echoes_back_is_scrubbed(
    world: World, replay, client, acme_folder: Path
) -> None:
    from .replay import Reply

    discover_providers([acme_folder])
    echo = {
        "error": {
            "message": f"bad gateway token {SECRET}",
            "type": "invalid_request_error",
            "code": f"gateway-{SECRET}",  # the vendor's code and request id echo it too
        },
        "request_id": f"req-{SECRET}",
    }
    replay.queue(Reply.json(echo, 400))
    install(
        world.providers,
        client,
        environ={"ACME_API_KEY": KEY, "ACME_TENANT": "t", "ACME_GATEWAY_TOKEN": SECRET},
    )
    world.define(ModelDefinition(name="m", provider="acme", model="a"), prompt(), agent())
    thread = await world.thread()

    await world.run(thread.id, "hi")

    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert SECRET not in json.dumps([dataclasses.asdict(x) for x in logs], default=str)
    assert "[redacted]" in logs[-1].error
    stored = (await world.messages(thread.id))[-1].metadata["error"]
    assert SECRET not in json.dumps(stored)
    assert (stored["vendor_code"], stored["request_id"]) == ("gateway-[redacted]", "req-[redacted]")


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (
            {"name": "openai", "base_url": "https://x.example/v1"},
            "define_provider: 'openai' is a built-in provider's name",
        ),
        (
            {"name": "p", "base_url": "ftp://x"},
            "define_provider p: base_url must be an http(s) URL, got 'ftp://x'",
        ),
        (
            {"name": "p", "base_url": "https://x.example/{org}"},
            "define_provider p: base_url uses undeclared config slots ['org']",
        ),
        (
            {
                "name": "p",
                "base_url": "https://x.example/{tok}",
                "config": {"tok": {"type": "secret", "default_env": "T"}},
            },
            "define_provider p: base_url may not hold secret slots ['tok'] (URLs are kept in "
            "logs); send them in a header",
        ),
        (
            {"name": "p", "base_url": "https://x", "config": {"a": {"type": "date"}}},
            "define_provider p: config slot 'a': type must be one of text, secret, url, number, "
            "boolean",
        ),
        (
            {
                "name": "p",
                "base_url": "https://x",
                "config": {"a": {"type": "secret", "default": "s"}},
            },
            "define_provider p: config slot 'a': a secret slot takes its value from default_env, "
            "never a constant default",
        ),
    ],
)
def test_C2_a_malformed_definition_is_refused_with_a_sentence(
    options: dict[str, object], sentence: str
) -> None:
    from runtime.providers.registry import define

    with pytest.raises(ProviderDefinitionError) as caught:
        define(define_provider(options))
    assert str(caught.value) == sentence
