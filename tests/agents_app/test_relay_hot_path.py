"""``studio.relay_hot_path``: no debug-log work per frame in redis-py and autobahn (#21)."""

from __future__ import annotations

import logging
from typing import Any

import click
import pytest
from autobahn.twisted import websocket as twisted_websocket
from autobahn.websocket import protocol
from channels_redis.pubsub import RedisSingleShardConnection
from redis._parsers.hiredis import _AsyncHiredisParser
from redis._parsers.resp3 import _AsyncRESP3Parser
from twisted.internet import tcp

from studio import relay_hot_path

PARSERS = (_AsyncHiredisParser, _AsyncRESP3Parser)


class Unprintable(list[Any]):
    """A Pub/Sub push whose text must not be built while debug logging is off."""

    def __str__(self) -> str:
        raise AssertionError("the push was turned into text")

    __repr__ = __str__


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Put the libraries' own functions back after the test.
    for parser in PARSERS:
        monkeypatch.setattr(
            parser, "handle_pubsub_push_response", parser.handle_pubsub_push_response
        )
    for module in (protocol, twisted_websocket):
        monkeypatch.setattr(module, "hltype", module.hltype)
        monkeypatch.setattr(module, "hlval", module.hlval)
    monkeypatch.setattr(
        RedisSingleShardConnection, "_do_receiving", RedisSingleShardConnection._do_receiving
    )
    monkeypatch.setattr(tcp.Server, "write", tcp.Server.write)
    relay_hot_path.install()


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
async def test_a_pubsub_push_is_not_turned_into_text_with_debug_logging_off(
    installed: None, parser: Any
) -> None:
    push = Unprintable([b"message", b"asgi.group", b"payload"])
    handler = parser(socket_read_size=65536).pubsub_push_handler_func
    assert await handler(push) is push


async def test_a_pubsub_push_is_still_logged_at_debug(
    installed: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="push_response"):
        handler = _AsyncHiredisParser(socket_read_size=65536).pubsub_push_handler_func
        assert await handler([b"message", b"asgi.group", b"payload"]) == [
            b"message",
            b"asgi.group",
            b"payload",
        ]
    assert "Push response: [b'message', b'asgi.group', b'payload']" in caplog.messages


def test_autobahns_debug_arguments_are_plain_text(
    installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_colour(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("click.style ran for a debug argument")

    monkeypatch.setattr(click, "style", no_colour)
    sender = protocol.WebSocketProtocol.sendData
    for module in (protocol, twisted_websocket):
        assert module.hltype(sender) == "<autobahn.websocket.protocol.WebSocketProtocol.sendData>"
        assert module.hlval(1234) == "1234"
        assert module.hltype(object()) == "<unknown>"


def test_install_twice_is_the_same(installed: None) -> None:
    relay_hot_path.install()
    assert protocol.hltype is relay_hot_path.plain_type
    assert _AsyncHiredisParser.handle_pubsub_push_response is relay_hot_path._push_response


def test_the_patched_libraries_are_the_versions_the_patches_were_measured_on() -> None:
    """studio.relay_hot_path reaches into private names of four libraries: an upgrade of any
    of them must be a conscious step (read the patched code again, bench, update the table)."""
    from importlib.metadata import version

    from studio.relay_hot_path import PATCHED_FOR

    installed = {name: version(name) for name in PATCHED_FOR}
    assert installed == PATCHED_FOR, (
        "a patched library changed version: check studio/relay_hot_path.py against it, "
        f"re-run bench/service_bench.py, then update PATCHED_FOR ({installed} != {PATCHED_FOR})"
    )
