"""``studio.relay_hot_path``: no debug-log work per frame in autobahn (#21), and each patch
pinned to the library version it was written for (#37)."""

from __future__ import annotations

from typing import Any

import click
import pytest
from autobahn.twisted import websocket as twisted_websocket
from autobahn.websocket import protocol
from twisted.internet import tcp

from studio import relay_hot_path


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Put the libraries' own functions back after the test.
    for module in (protocol, twisted_websocket):
        monkeypatch.setattr(module, "hltype", module.hltype)
        monkeypatch.setattr(module, "hlval", module.hlval)
    monkeypatch.setattr(tcp.Server, "write", tcp.Server.write)
    relay_hot_path.install()


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
    # Twisted's write wrapped once: what the wrapper falls back to is Twisted's own.
    fallback = tcp.Server.write.buffered_write  # type: ignore[attr-defined]
    assert not hasattr(fallback, "buffered_write")


@pytest.mark.parametrize("patch", sorted(relay_hot_path.PATCHES))
def test_the_patched_library_is_the_version_the_patch_was_written_for(patch: str) -> None:
    """Each patch reaches into private code of its library: an upgrade must be a conscious
    step (read the patched code again, re-run the bench, move the pin)."""
    from importlib.metadata import version

    library, pinned = relay_hot_path.PATCHES[patch]
    installed = version(library)
    assert installed == pinned, (
        f"re-check patch {patch!r} (studio/relay_hot_path.py) against {library} {installed} "
        f"(it was written for {pinned}; bench/service_bench.py --edge --levels 200), "
        "then update the pin in PATCHES"
    )
