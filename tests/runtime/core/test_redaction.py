"""Redaction by value: the ``Redactor`` itself, then the engine keeping secrets out of everything
it stores or shows (messages, logs, frames, streamed chunks, Python logs)."""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
from typing import Any

import pytest

from runtime.core.redaction import Redactor, variants
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_tool
from tests.runtime.conftest import Harness, World, agent, prompt

SECRET = "sk-canary-Zq9/+x?y=1&z"  # characters that change under every encoding
MARK = "[REDACTED:API_KEY]"
# An instance secret is not the user's: its marker does not name it (no oracle for guesses).
INSTANCE_MARK = "[REDACTED]"


def test_raw_value_is_replaced_with_a_named_marker() -> None:
    r = Redactor([("API_KEY", SECRET)])
    assert r.text(f"key={SECRET}.") == f"key={MARK}."


@pytest.mark.parametrize(
    "encode",
    [
        lambda s: base64.b64encode(s.encode()).decode(),
        lambda s: base64.b64encode(s.encode()).decode().rstrip("="),
        lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
        lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
        lambda s: urllib.parse.quote(s, safe=""),
        lambda s: urllib.parse.quote_plus(s),
        lambda s: json.dumps(s)[1:-1],
    ],
    ids=["b64", "b64-nopad", "urlsafe", "urlsafe-nopad", "quote", "quote_plus", "json"],
)
def test_common_encodings_are_replaced(encode: Any) -> None:
    r = Redactor([("API_KEY", SECRET)])
    out = r.text(f"<{encode(SECRET)}>")
    assert MARK in out and encode(SECRET) not in out


@pytest.mark.parametrize("prefix", [b"", b"a", b"ab", b"abc"])
def test_secret_inside_longer_base64_is_caught_at_any_offset(prefix: bytes) -> None:
    r = Redactor([("API_KEY", SECRET)])
    blob = base64.b64encode(prefix + SECRET.encode() + b" and more").decode()
    assert r.contains(blob)


def test_json_escaped_secret_in_a_serialized_body() -> None:
    tricky = 'pa"ss\\word-1234'
    r = Redactor([("PW", tricky)])
    body = json.dumps({"content": f"the password is {tricky}"})
    assert tricky not in json.loads(r.text(body).replace("[REDACTED:PW]", "X"))["content"]


def test_short_secrets_are_ignored_and_text_is_untouched() -> None:
    assert variants("abc") == set()
    r = Redactor([("PIN", "123")])
    assert not r and r.text("code 123") == "code 123"


def test_data_redacts_nested_values_and_keys_without_mutating() -> None:
    r = Redactor([("API_KEY", SECRET)])
    original: dict[str, Any] = {"a": [SECRET, {"b": (SECRET, 3)}], SECRET: None}
    out = r.data(original)
    assert out == {"a": [MARK, {"b": (MARK, 3)}], MARK: None}
    assert original["a"][0] == SECRET


def test_longer_form_wins_over_a_shorter_one_it_contains() -> None:
    r = Redactor([("SHORT", "abcd1234"), ("LONG", "xxabcd1234yy")])
    assert r.text("xxabcd1234yy") == "[REDACTED:LONG]"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_stream_catches_a_secret_split_across_chunks(size: int) -> None:
    r = Redactor([("API_KEY", SECRET)])
    text = f"before {SECRET} middle {SECRET}after"
    stream = r.stream()
    shown = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
    shown.append(stream.flush())
    assert "".join(shown) == f"before {MARK} middle {MARK}after"
    assert all(SECRET[:6] not in piece for piece in shown)


def test_stream_without_secrets_passes_chunks_through() -> None:
    stream = Redactor().stream()
    assert stream.feed("abc") == "abc" and stream.flush() == ""


# --- the engine ---------------------------------------------------------------------------


@define_tool("Reads the API key and echoes it")
async def leak(state: Any) -> str:
    key = await state.env("API_KEY")
    state.emit("leaky", {"key": key})
    return f"key={key} b64={base64.b64encode(key.encode()).decode()}"


@define_tool("Fails with the key in the message")
async def explode(state: Any) -> str:
    raise RuntimeError(f"bad key {await state.env('API_KEY')}")


def _setup(world: World, harness: Harness, script: TestScript, *tools: Any) -> None:
    harness.set_instance_env("API_KEY", SECRET)
    world.register(*tools)
    world.define(
        prompt(
            text=[{"type": "text", "content": "Key: "}, {"type": "env", "property": "API_KEY"}],
            tools=[t.name for t in tools],
        ),
        agent(),
    )
    world.script("m", script)


def _everything(value: Any) -> str:
    return json.dumps(value, default=lambda o: getattr(o, "__dict__", None) or repr(o))


async def test_engine_keeps_secrets_out_of_messages_logs_and_frames(
    world: World, harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    script = (
        TestScript()
        .add_tool_call("leak")
        .add_tool_call("explode")
        .add_text(f"Your key is {SECRET}, encoded {urllib.parse.quote(SECRET, safe='')}")
    )
    _setup(world, harness, script, leak, explode)
    caplog.set_level(logging.DEBUG)
    thread, _ = await world.chat("go")
    # The provider did get the secret (system prompt env part): that is allowed on the wire.
    assert world.requests()[0].system == f"Key: {SECRET}"
    # ... and the tool result it saw next is redacted.
    assert SECRET not in _everything(world.requests()[1].messages)
    assert INSTANCE_MARK in _everything(world.requests()[1].messages)
    messages = await world.messages(thread.id)
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    frames = world.sink.frames[thread.id]
    for name, blob in (("messages", messages), ("logs", logs), ("frames", frames)):
        dumped = _everything([m.__dict__ if hasattr(m, "__dict__") else m for m in blob])
        dumped += repr(blob)
        assert not Redactor([("API_KEY", SECRET)]).contains(dumped), name
    assert INSTANCE_MARK in (messages[-1].content or "")
    assert SECRET not in caplog.text


async def test_streamed_chunks_never_carry_the_secret(world: World, harness: Harness) -> None:
    script = TestScript().add_text(f"a {SECRET} b").with_streaming(chunk_size=3)
    _setup(world, harness, script)
    thread, _ = await world.chat("go")
    chunks = [f["chunk"] for f in world.sink.of_type(thread.id, "message_chunk")]
    assert "".join(chunks) == f"a {INSTANCE_MARK} b"
    assert all(SECRET[:4] not in c for c in chunks)


async def test_set_env_secret_is_redacted_from_then_on(world: World, harness: Harness) -> None:
    @define_tool("Sets a new secret and returns it")
    async def mint(state: Any) -> str:
        await state.set_env("MINTED", "freshly-minted-token")
        return "token freshly-minted-token"

    _setup(world, harness, TestScript().add_tool_call("mint").add_text("done"), mint)
    thread, _ = await world.chat("go")
    tool_row = [m for m in await world.messages(thread.id) if m.role == "tool"][0]
    assert tool_row.content == "token [REDACTED:MINTED]"


async def test_text_values_are_not_redacted(world: World, harness: Harness) -> None:
    @define_tool("Returns a text value")
    async def show(state: Any) -> str:
        return "region " + await state.env("REGION")

    harness.set_instance_env("REGION", "eu-west-1", kind="text")
    _setup(world, harness, TestScript().add_tool_call("show").add_text("done"), show)
    thread, _ = await world.chat("go")
    tool_row = [m for m in await world.messages(thread.id) if m.role == "tool"][0]
    assert tool_row.content == "region eu-west-1"
